//! Who gets a thread: the two pools a connection passes through. A new connection is *pending* until it proves itself
//! (a control connection's hello with its proof, a data connection's or
//! TCP_CRR transaction's header naming an open session's cookie); only then
//! is it *admitted*, into a pool of its own. Strangers therefore compete
//! only with strangers:
//!
//! - at most [`MAX_PENDING`] connections are pending at once, at most
//!   [`MAX_PENDING_PER_PEER`] from one address, each under a short
//!   whole-handshake deadline ([`HANDSHAKE`]);
//! - a new connection that finds its address's share, or the pool, full
//!   makes room by closing a pending one: the oldest that has sent nothing
//!   yet, else the oldest; from its own address, or from the address that
//!   holds the most. A hostile peer's silent connections, however many and
//!   however often renewed, push out only each other, while a client that
//!   speaks at once finishes its handshake in a round trip or two;
//! - at most [`MAX_CONNECTIONS`] admitted connections are served at once
//!   (sessions, their streams and transactions).

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Shutdown, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::Shared;

/// Admitted connections served at once (control, data and TCP_CRR alike);
/// more are closed as they come.
pub const MAX_CONNECTIONS: usize = 128;
/// Connections in their handshake at once, from anyone.
pub const MAX_PENDING: usize = 64;
/// Connections in their handshake at once from one address.
pub const MAX_PENDING_PER_PEER: usize = 16;
/// A connection's whole handshake (its tag and what follows: the hello
/// and its proof, or a data header) must arrive within this, however it
/// trickles; the challenge a control connection is given is good for as
/// long.
pub const HANDSHAKE: Duration = Duration::from_secs(3);

/// One pending connection.
struct Waiting {
    id: u64,
    peer: IpAddr,
    /// Has sent its tag: it is speaking.
    spoke: bool,
    /// A handle on its socket, to close it when it must make room.
    socket: TcpStream,
}

/// The pending pool, oldest first.
#[derive(Default)]
pub(super) struct Pending {
    next: u64,
    waiting: VecDeque<Waiting>,
    /// Threads of connections that entered and have not yet left (an
    /// evicted one's included, until it notices its socket closed).
    threads: usize,
}

impl Pending {
    /// Registers a connection from `peer`, making room first (see the
    /// module doc); its id.
    fn enter(&mut self, peer: IpAddr, socket: TcpStream) -> u64 {
        let from_peer = self.waiting.iter().filter(|w| w.peer == peer).count();
        if from_peer >= MAX_PENDING_PER_PEER {
            self.evict(peer);
        } else if self.waiting.len() >= MAX_PENDING {
            let mut counts: HashMap<IpAddr, usize> = HashMap::new();
            for w in &self.waiting {
                *counts.entry(w.peer).or_default() += 1;
            }
            // The address with the most; of equals, the one whose oldest
            // came first.
            let most = counts.values().copied().max().unwrap_or(0);
            if let Some(busiest) = self.waiting.iter().find(|w| counts[&w.peer] == most) {
                let busiest = busiest.peer;
                self.evict(busiest);
            }
        }
        self.next += 1;
        self.threads += 1;
        self.waiting.push_back(Waiting {
            id: self.next,
            peer,
            spoke: false,
            socket,
        });
        self.next
    }

    /// Closes `peer`'s oldest silent pending connection, else its oldest.
    fn evict(&mut self, peer: IpAddr) {
        let at = (self.waiting.iter())
            .position(|w| w.peer == peer && !w.spoke)
            .or_else(|| self.waiting.iter().position(|w| w.peer == peer));
        if let Some(w) = at.and_then(|i| self.waiting.remove(i)) {
            // Its thread's next read ends at once.
            let _ = w.socket.shutdown(Shutdown::Both);
        }
    }

    /// Takes `id` out of the pool: true if it was still there (not evicted).
    fn leave(&mut self, id: u64) -> bool {
        match self.waiting.iter().position(|w| w.id == id) {
            Some(i) => {
                self.waiting.remove(i);
                true
            }
            None => false,
        }
    }
}

/// A pending connection's place, held by its thread: dropped (the
/// handshake failed or ended), it leaves the pool; [`Ticket::admit`] trades
/// it for an admitted [`Slot`].
pub(super) struct Ticket {
    shared: Arc<Shared>,
    id: u64,
    /// Still in the pending pool's count of threads.
    counted: bool,
}

/// Why a proven connection was not admitted.
#[derive(Debug, PartialEq)]
pub(super) enum NotAdmitted {
    /// It was closed to make room while it spoke.
    Evicted,
    /// [`MAX_CONNECTIONS`] are being served.
    Full,
}

impl Ticket {
    /// Marks the connection as speaking (its tag arrived): it is pushed out
    /// only after the silent ones.
    pub fn spoke(&self) {
        let mut p = self.shared.pending.lock().unwrap();
        if let Some(w) = p.waiting.iter_mut().find(|w| w.id == self.id) {
            w.spoke = true;
        }
    }

    /// The connection proved itself: its place in the admitted pool.
    pub fn admit(mut self) -> Result<Slot, NotAdmitted> {
        let was_pending = {
            let mut p = self.shared.pending.lock().unwrap();
            p.threads -= 1;
            p.leave(self.id)
        };
        self.counted = false;
        if !was_pending {
            return Err(NotAdmitted::Evicted);
        }
        let admitted = &self.shared.admitted;
        if admitted.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            admitted.fetch_sub(1, Ordering::SeqCst);
            return Err(NotAdmitted::Full);
        }
        Ok(Slot(self.shared.clone()))
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.counted {
            let mut p = self.shared.pending.lock().unwrap();
            p.threads -= 1;
            p.leave(self.id);
        }
    }
}

/// Counts an admitted connection while its thread serves it.
pub(super) struct Slot(Arc<Shared>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.admitted.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Registers a connection just accepted from `peer` in the pending pool
/// (making room as the module doc says): its ticket, or None when it is
/// closed at once (threads of evicted connections have piled up).
pub(super) fn enter(shared: &Arc<Shared>, s: &TcpStream, peer: IpAddr) -> Option<Ticket> {
    let handle = s.try_clone().ok()?;
    let mut p = shared.pending.lock().unwrap();
    // Evicted threads leave at once (their socket is shut down); should
    // they still pile up, newcomers are closed until they have: threads
    // stay bounded.
    if p.threads >= 2 * MAX_PENDING {
        return None;
    }
    let id = p.enter(peer, handle);
    Some(Ticket {
        shared: shared.clone(),
        id,
        counted: true,
    })
}
