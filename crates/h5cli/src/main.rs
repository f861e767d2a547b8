//! The `h5` command.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() == 3 && args[0] == "dump" && args[1] == "--canonical" {
        match h5cli::canon::dump(std::path::Path::new(&args[2])) {
            Ok(v) => println!("{v}"),
            Err(e) => {
                eprintln!("h5: {e}");
                std::process::exit(2);
            }
        }
    } else {
        eprintln!("usage: h5 dump --canonical FILE");
        std::process::exit(2);
    }
}
