//! Depth-first walk over the objects below a group ([`Group::walk`]).

use super::api::{Group, Object};
use crate::error::{Error, Result};
use crate::format::message::link::LinkTarget;
use crate::Addr;
use alloc::collections::BTreeSet;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// The objects below a group, depth-first, each once: see [`Group::walk`].
pub struct Walk {
    group: Group,
    /// Objects still to visit, the next one last: (path, header address).
    stack: Vec<(String, Addr)>,
    /// Header addresses already visited (or queued), so that every object
    /// is yielded once and link cycles end.
    seen: BTreeSet<Addr>,
    /// An error to yield before the next object (a group whose links could
    /// not be read).
    pending: Option<Error>,
}

impl core::fmt::Debug for Walk {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Walk")
            .field("group", &self.group.path())
            .field("queued", &self.stack.len())
            .finish()
    }
}

fn child_path(parent: &str, name: &str) -> String {
    if parent.ends_with('/') {
        format!("{parent}{name}")
    } else {
        format!("{parent}/{name}")
    }
}

impl Walk {
    pub(super) fn new(group: &Group) -> Walk {
        let mut w = Walk {
            group: group.clone(),
            stack: Vec::new(),
            seen: BTreeSet::new(),
            pending: None,
        };
        w.seen.insert(group.addr());
        w.push_children(group);
        w
    }

    /// Queue the hard-linked members of `g` not seen yet, in name order.
    fn push_children(&mut self, g: &Group) {
        match g.links() {
            Ok(links) => {
                for l in links.iter().rev() {
                    if let LinkTarget::Hard(addr) = l.target {
                        if self.seen.insert(addr) {
                            self.stack.push((child_path(g.path(), &l.name), addr));
                        }
                    }
                }
            }
            Err(e) => self.pending = Some(e),
        }
    }
}

impl Iterator for Walk {
    type Item = Result<Object>;

    fn next(&mut self) -> Option<Result<Object>> {
        if let Some(e) = self.pending.take() {
            return Some(Err(e));
        }
        let (path, addr) = self.stack.pop()?;
        let obj = match self.group.file().object_at(addr, &path) {
            Ok(o) => o,
            Err(e) => return Some(Err(e.with_path(&path))),
        };
        if let Object::Group(g) = &obj {
            self.push_children(g);
        }
        Some(Ok(obj))
    }
}

impl Group {
    /// Every object below this group, depth-first in link-name order, each
    /// once (the first path that reaches it), as h5py's `visititems` and
    /// libhdf5's `H5Ovisit`: hard links are followed, soft and external
    /// links are not. An object or group that cannot be read gives an `Err`
    /// item and the walk goes on with the rest.
    ///
    /// ```
    /// # fn main() -> h5fmt::Result<()> {
    /// let mut w = h5fmt::FileWriter::in_memory();
    /// let mut root = w.root();
    /// root.create_dataset("a/x").write(&[1u8])?;
    /// root.create_dataset("b").write(&[2u8])?;
    /// let file = h5fmt::File::from_bytes(w.finish()?)?;
    ///
    /// let paths: Vec<String> = file
    ///     .root()?
    ///     .walk()
    ///     .map(|o| o.map(|o| o.path().to_string()))
    ///     .collect::<h5fmt::Result<_>>()?;
    /// assert_eq!(paths, ["/a", "/a/x", "/b"]);
    /// # Ok(()) }
    /// ```
    pub fn walk(&self) -> Walk {
        Walk::new(self)
    }
}
