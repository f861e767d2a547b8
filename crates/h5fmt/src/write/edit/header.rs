//! A chunk-aware, editable image of one object header (v1 or v2).
//!
//! The reader flattens an object header into one message list; editing needs
//! to know which chunk each message lives in, so that a change rewrites
//! exactly one existing chunk in place (one write call) and anything that no
//! longer fits moves to a new continuation chunk written beforehand at fresh
//! space.

use crate::codec::Encoder;
use crate::error::{Error, Result};
use crate::format::message::kind;
use crate::format::object_header::{FLAG_ATTR_CRT_ORDER_TRACKED, OCHK_SIGNATURE};
use crate::io::Storage;
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// One message as stored (body padded to 8 bytes in v1 headers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Msg {
    pub kind: u16,
    pub flags: u8,
    pub co: Option<u16>,
    pub data: Vec<u8>,
}

/// One chunk of the header.
#[derive(Debug, Clone)]
pub(crate) struct Chunk {
    /// Relative address of the chunk's first byte (the prefix for chunk 0).
    pub addr: u64,
    /// Bytes before the message area (v1 prefix, v2 prefix, `OCHK`, nothing).
    pub prefix: Vec<u8>,
    /// Bytes available for messages (and the gap).
    pub cap: usize,
    /// Messages, NIL ones included.
    pub msgs: Vec<Msg>,
    /// Changed since loaded: to be rewritten in place.
    pub dirty: bool,
    /// Created by this edit: written at fresh space.
    pub fresh: bool,
}

/// An editable object header.
#[derive(Debug, Clone)]
pub(crate) struct HeaderImage {
    /// 1 or 2.
    pub version: u8,
    /// v2 flags.
    pub flags: u8,
    /// Chunks in the order libhdf5 reads them.
    pub chunks: Vec<Chunk>,
    /// The file's address and length sizes.
    pub sizes: crate::Sizes,
}

/// Where a message lives: chunk index, message index.
pub(crate) type Loc = (usize, usize);

impl HeaderImage {
    /// The file space of each chunk: (address, length), the v2 checksum
    /// included.
    pub(crate) fn chunk_extents(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let sum = if self.version == 2 { 4 } else { 0 };
        self.chunks
            .iter()
            .map(move |c| (c.addr, (c.prefix.len() + c.cap + sum) as u64))
    }

    /// Read and fully validate the header at `addr` (checksums, continuation cycles, limits).
    pub(crate) fn load(st: &Storage, ctx: Ctx, addr: Addr) -> Result<Self> {
        let h = crate::read::object_header::read_header_chunks(st, addr, ctx)?;
        Ok(HeaderImage {
            version: h.version,
            flags: h.flags,
            chunks: h
                .chunks
                .into_iter()
                .map(|c| Chunk {
                    addr: c.addr.get(),
                    prefix: c.prefix,
                    cap: c.area_len,
                    msgs: c.messages.into_iter().map(to_msg).collect(),
                    dirty: false,
                    fresh: false,
                })
                .collect(),
            sizes: ctx.sizes,
        })
    }

    /// Size of a message header.
    pub(crate) fn msg_hdr(&self) -> usize {
        if self.version == 1 {
            8
        } else if self.flags & FLAG_ATTR_CRT_ORDER_TRACKED != 0 {
            6
        } else {
            4
        }
    }

    /// Bytes a message with a body of `n` bytes takes.
    pub(crate) fn msg_len(&self, n: usize) -> usize {
        self.msg_hdr()
            + if self.version == 1 {
                n.div_ceil(8) * 8
            } else {
                n
            }
    }

    /// All messages of `kind` with their locations.
    pub(crate) fn find_all(&self, k: u16) -> Vec<(Loc, &Msg)> {
        let mut v = Vec::new();
        for (ci, c) in self.chunks.iter().enumerate() {
            for (mi, m) in c.msgs.iter().enumerate() {
                if m.kind == k {
                    v.push(((ci, mi), m));
                }
            }
        }
        v
    }

    /// The first message of `kind`.
    pub(crate) fn find(&self, k: u16) -> Option<(Loc, &Msg)> {
        self.find_all(k).into_iter().next()
    }

    fn used(&self, c: &Chunk) -> usize {
        c.msgs
            .iter()
            .filter(|m| m.kind != kind::NIL)
            .map(|m| self.msg_len(m.data.len()))
            .sum()
    }

    /// Whether the non-NIL messages of `msgs` (plus `extra` bytes) fit a chunk of `cap`.
    fn fits(&self, used: usize, cap: usize) -> bool {
        if used > cap {
            return false;
        }
        let rest = cap - used;
        // v1: the rest is a multiple of 8 (a NIL or nothing); v2: a NIL or a gap.
        self.version != 1 || rest.is_multiple_of(8)
    }

    fn new_msg(&self, k: u16, flags: u8, data: &[u8]) -> Msg {
        let mut d = data.to_vec();
        if self.version == 1 {
            d.resize(d.len().div_ceil(8) * 8, 0);
        }
        Msg {
            kind: k,
            flags,
            co: (self.version == 2 && self.flags & FLAG_ATTR_CRT_ORDER_TRACKED != 0).then_some(0),
            data: d,
        }
    }

    /// Replace the body of the message at `loc`.
    pub(crate) fn replace(&mut self, loc: Loc, data: &[u8], alloc: &mut dyn FnMut(u64) -> u64) {
        let (ci, mi) = loc;
        let v1 = self.version == 1;
        if let Some(m) = self.chunks.get_mut(ci).and_then(|c| c.msgs.get_mut(mi)) {
            m.data = data.to_vec();
            if v1 {
                m.data.resize(m.data.len().div_ceil(8) * 8, 0);
            }
        }
        self.settle(ci, alloc);
    }

    /// Set the flags of the message at `loc` (written with its chunk).
    pub(crate) fn set_flags(&mut self, loc: Loc, flags: u8) {
        let (ci, mi) = loc;
        if let Some(c) = self.chunks.get_mut(ci) {
            if let Some(m) = c.msgs.get_mut(mi) {
                m.flags = flags;
                c.dirty = true;
            }
        }
    }

    /// Remove the message at `loc` (it becomes free space).
    pub(crate) fn remove(&mut self, loc: Loc) {
        let (ci, mi) = loc;
        if let Some(c) = self.chunks.get_mut(ci) {
            if mi < c.msgs.len() {
                c.msgs.remove(mi);
                c.dirty = true;
            }
        }
    }

    /// Add a message where it fits; a new continuation chunk when nowhere.
    pub(crate) fn add(
        &mut self,
        k: u16,
        flags: u8,
        data: &[u8],
        alloc: &mut dyn FnMut(u64) -> u64,
    ) {
        self.add_co(k, flags, data, 0, alloc);
    }

    /// Whether attribute creation order is tracked (v2 header flag).
    pub(crate) fn attr_order_tracked(&self) -> bool {
        self.version == 2 && self.flags & FLAG_ATTR_CRT_ORDER_TRACKED != 0
    }

    /// Whether attribute creation order is indexed (v2 header flag).
    pub(crate) fn attr_order_indexed(&self) -> bool {
        self.version == 2
            && self.flags & crate::format::object_header::FLAG_ATTR_CRT_ORDER_INDEXED != 0
    }

    /// The attribute storage phase change values (maximum compact,
    /// minimum dense): from a v2 header's prefix, else libhdf5's defaults.
    pub(crate) fn attr_phase_change(&self) -> (usize, usize) {
        use crate::format::object_header::{FLAG_ATTR_PHASE_CHANGE, FLAG_TIMES};
        if self.version == 2 && self.flags & FLAG_ATTR_PHASE_CHANGE != 0 {
            let at = 6 + if self.flags & FLAG_TIMES != 0 { 16 } else { 0 };
            let p = self.chunks.first().map(|c| c.prefix.as_slice());
            let get = |o: usize| {
                p.and_then(|p| p.get(o..o + 2))
                    .map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])))
            };
            if let (Some(mc), Some(md)) = (get(at), get(at + 2)) {
                return (mc, md);
            }
        }
        (8, 6)
    }

    /// Add a message with creation order `co` (kept when the header
    /// tracks attribute creation order).
    pub(crate) fn add_co(
        &mut self,
        k: u16,
        flags: u8,
        data: &[u8],
        co: u16,
        alloc: &mut dyn FnMut(u64) -> u64,
    ) {
        let mut m = self.new_msg(k, flags, data);
        if m.co.is_some() {
            m.co = Some(co);
        }
        let need = self.msg_len(m.data.len());
        // Prefer an already fresh or dirty chunk, then the one with the most room.
        let mut best: Option<(usize, usize)> = None;
        for (ci, c) in self.chunks.iter().enumerate() {
            let used = self.used(c) + need;
            if self.fits(used, c.cap) {
                let room = c.cap - used;
                let score = if c.fresh || c.dirty {
                    usize::MAX / 2 + room
                } else {
                    room
                };
                if best.is_none_or(|(_, s)| score > s) {
                    best = Some((ci, score));
                }
            }
        }
        if let Some((ci, _)) = best {
            if let Some(c) = self.chunks.get_mut(ci) {
                c.msgs.push(m);
                c.dirty = true;
            }
            return;
        }
        // Chunk 0 overflows (its messages move out), taking the new one along.
        if let Some(c) = self.chunks.get_mut(0) {
            c.msgs.push(m);
        }
        self.settle(0, alloc);
    }

    /// Make chunk `ci` fit: when its messages exceed its capacity they move
    /// to a new chunk (with room to grow), and a continuation message to it
    /// is all that stays.
    fn settle(&mut self, ci: usize, alloc: &mut dyn FnMut(u64) -> u64) {
        let Some(c) = self.chunks.get(ci) else { return };
        let used = self.used(c);
        let cap = c.cap;
        if self.fits(used, cap) {
            if let Some(c) = self.chunks.get_mut(ci) {
                c.dirty = true;
            }
            return;
        }
        let moved: Vec<Msg> = c
            .msgs
            .iter()
            .filter(|m| m.kind != kind::NIL)
            .cloned()
            .collect();
        let slack = 64 + used / 4;
        let mut new_cap = used + slack;
        if self.version == 1 {
            new_cap = new_cap.div_ceil(8) * 8;
        }
        let (prefix, extra) = if self.version == 1 {
            (Vec::new(), 0)
        } else {
            (OCHK_SIGNATURE.to_vec(), 8)
        };
        let total = (new_cap + extra) as u64;
        let addr = alloc(total);
        let mut body = Encoder::new();
        // The continuation body: address and length (sizes of the file).
        body.put_addr(Addr(addr), self.sizes);
        body.put_len(total, self.sizes);
        let cont = self.new_msg(kind::CONTINUATION, 0, body.as_bytes());
        if let Some(c) = self.chunks.get_mut(ci) {
            c.msgs = alloc::vec![cont];
            c.dirty = true;
        }
        self.chunks.push(Chunk {
            addr,
            prefix,
            cap: new_cap,
            msgs: moved,
            dirty: true,
            fresh: true,
        });
    }

    /// Encode chunk `ci` (prefix, messages, filler, checksum).
    pub(crate) fn encode_chunk(&self, ci: usize) -> Result<Vec<u8>> {
        let c = self
            .chunks
            .get(ci)
            .ok_or_else(|| Error::usage("no such header chunk"))?;
        let used = self.used(c);
        if !self.fits(used, c.cap) {
            return Err(Error::usage("object header chunk overflows"));
        }
        let hdr = self.msg_hdr();
        let mut enc = Encoder::with_capacity(c.prefix.len() + c.cap + 4);
        if ci == 0 && self.version == 1 {
            // Prefix with the total message count (NILs included).
            let mut n = 0usize;
            for ch in &self.chunks {
                n += ch.msgs.iter().filter(|m| m.kind != kind::NIL).count();
                if ch.cap > self.used(ch) {
                    n += 1;
                }
            }
            let refcount = c
                .prefix
                .get(4..8)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map_or(1, u32::from_le_bytes);
            enc.put_u8(1);
            enc.put_u8(0);
            enc.put_u16(u16::try_from(n).map_err(|_| Error::usage("more than 65535 messages"))?);
            enc.put_u32(refcount);
            enc.put_u32(u32::try_from(c.cap).map_err(|_| Error::usage("header chunk size"))?);
            enc.put_zeros(4);
        } else {
            enc.put_bytes(&c.prefix);
        }
        let area_start = enc.len();
        for m in c.msgs.iter().filter(|m| m.kind != kind::NIL) {
            self.put_msg(&mut enc, m)?;
        }
        let rest = c.cap - used;
        if rest >= hdr {
            let nil = Msg {
                kind: kind::NIL,
                flags: 0,
                co: (hdr == 6).then_some(0),
                data: alloc::vec![0; rest - hdr],
            };
            self.put_msg(&mut enc, &nil)?;
        } else {
            enc.put_zeros(rest);
        }
        debug_assert_eq!(enc.len() - area_start, c.cap);
        if self.version == 2 {
            enc.put_checksum_from(0);
        }
        Ok(enc.into_vec())
    }

    fn put_msg(&self, enc: &mut Encoder, m: &Msg) -> Result<()> {
        let size =
            u16::try_from(m.data.len()).map_err(|_| Error::usage("message larger than 64 KiB"))?;
        if self.version == 1 {
            enc.put_u16(m.kind);
            enc.put_u16(size);
            enc.put_u8(m.flags);
            enc.put_zeros(3);
        } else {
            enc.put_u8(u8::try_from(m.kind).map_err(|_| Error::usage("message type"))?);
            enc.put_u16(size);
            enc.put_u8(m.flags);
            if self.msg_hdr() == 6 {
                enc.put_u16(m.co.unwrap_or(0));
            }
        }
        enc.put_bytes(&m.data);
        Ok(())
    }
}

fn to_msg(m: crate::format::message::Message) -> Msg {
    Msg {
        kind: m.kind,
        flags: m.flags,
        co: m.creation_order,
        data: m.data,
    }
}
