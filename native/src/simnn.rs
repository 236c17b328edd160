//! The simulated NameNode's event loop (`simulate_namenode`): a queueing model of one NameNode
//! replayed in virtual time, GIL released. The model and its parameters are documented in
//! `mimesisbench.sim.model`; the reference implementation, written with simpy, is
//! `mimesisbench.sim.reference`, and the tests check that both give the same times.
//!
//! Written by hand because no discrete-event library replays ten million calls in under a
//! minute (simpy does about 28 k calls a second here: `bench/bench_simnn.py`). The loop is a
//! binary heap of (time, sequence) events; ties go in the order they were scheduled, as simpy's.
//!
//! One call's path: a slot of its client (`client`: each client, a worker of a run, has its own
//! `outstanding` slots, FIFO) -> the client's send CPU -> half the network delay -> (the NameNode's
//! wake-up CPU, when no other call was in it for longer than the call's `s_spin`, spent beside the
//! call: it takes a core, the call goes on) -> the RPC call queue (FIFO) -> a handler (its wake-up
//! CPU, when it was parked) -> the namesystem lock (read or write; fair or not) -> its CPU under
//! the lock -> release -> for a write, the edit-log syncs (group commit: one sync at a time, every
//! write that joined while one ran goes in the next) -> its CPU after the lock -> the handler is
//! free -> the other half of the network delay -> the client's receive CPU -> done, or, for a call
//! of several RPCs (`rpcs`: a create's `create` then `complete`), the next RPC's send on the same
//! slot. With `async_edits` (Hadoop 3's asynchronous edit logging) the syncs run beside the CPU
//! after the lock, the handler does not wait for them, and the answer leaves once both are done;
//! with `edit_s` > 0 too, the syncs are the edit-log thread's, which after each sync sends the
//! batch's answers one after the other (`edit_s` of CPU each, on a core it takes after the I/O)
//! before its next sync, and each answer leaves as it is sent. A call's handler is descheduled (it
//! stalls) at most once per pass, at the first of two points where at least `cores` other bursts
//! are waiting for a core (twice as many threads runnable as cores), or, for a call with draws for
//! it (`stall_gate` after the lock, `stall_gate_wake` as it wakes: a write's), where its draw there
//! is under min(1, the run queue / `stall_queue`): as it is woken from a park for
//! the lock, for `stall_wake` when > 0 (fair: the lock reserved for it waits too; not fair: anyone
//! may take it meanwhile), or after its work under the lock, for `stall` when > 0 (times (the run
//! queue then / `stall_queue`)^`stall_power` where the call's `stall_queue` > 0), with the lock
//! held for the share of the stall that its work under the lock has of its NameNode work, then
//! without it. A client burst that starts while the client has no other burst started or waiting
//! adds the client's wake-up CPU. A CPU burst takes one of `cores` cores (FIFO; 0: unlimited); the
//! client's bursts only when `colocated` (else they are pure delays). A thread whose burst ends and
//! that starts its next one in the same step (it runs on) keeps its core (`spare`); one that blocks
//! or goes idle gives it back at the end of the step; a burst that waited for a core starts
//! `dispatch_s` after the core is freed (the host's switch between threads), but for a thread woken
//! for the lock, whose wake-up is the hand-over's. A handler that finds the lock taken parks, and
//! spends `park_s` of CPU when woken (fair: with the lock reserved for it; not fair: on a core
//! before it tries again, the lock free for anyone meanwhile). The host's other work (threads
//! the model leaves out), when given (`other_gap`, `other_run`), comes in runs that each hold a
//! core; a burst woken while one runs is placed on the run's core with a chance (`other_place`,
//! every `1 / other_place`-th such burst, whether or not another core is free: the kernel places a
//! woken thread on a busy core as often with another idle as not, `docs/simnn.md`), or, without a
//! chance given, a free core is taken and with none free the bursts are placed on the cores in
//! turn; one placed on a core the other work holds waits for that run to end, even if another core
//! is freed meanwhile (the kernel's run queue per core).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

const NONE: u8 = 0;
const READ: u8 = 1;
const WRITE: u8 = 2;
/// client numbers above this are refused (each client has a queue of its own)
const MAX_CLIENTS: u32 = 1 << 20;

/// What a call does when an event of its own comes due.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Step {
    Arrive,
    Sent,
    AtServer,
    HandlerAwake,
    LockWork,
    Synced,
    PostDone,
    Back,
    Received,
    Woken,
    SyncDone,
    StallHeld,
    Stalled,
    Responded,
    Beside,
    Retry,
    WokenLate,
    // the host's other work (`call` is the run's number, not a call's): a run comes due, a run
    // that waited for a core got one, a run ends
    OtherArrive,
    OtherStart,
    OtherDone,
}

#[derive(Clone, Copy, Debug)]
struct Event {
    t: f64,
    seq: u64,
    call: usize,
    step: Step,
    core: bool, // the event ends a CPU burst: a core is freed first
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Event {
    fn cmp(&self, other: &Self) -> Ordering {
        // a min-heap on (t, seq)
        other.t.total_cmp(&self.t).then_with(|| other.seq.cmp(&self.seq))
    }
}

/// The inputs, one value per call (in arrival order) and the server's settings.
pub struct Calls<'a> {
    pub arrive: &'a [f64],
    pub c_send: &'a [f64],
    pub c_recv: &'a [f64],
    pub c_wake: &'a [f64],
    pub c_spin: &'a [f64],
    pub s_wake: &'a [f64],
    pub s_spin: &'a [f64], // a call finds the NameNode idle only when no call was in it for this long
    pub h_wake: &'a [f64],
    pub stall: &'a [f64],      // after its work under the lock
    pub stall_wake: &'a [f64], // as its handler is woken from a park for the lock
    // the run queue (bursts waiting for a core) `stall` is the length for: the stall after the
    // work under the lock lasts `stall` times (the queue as it starts / this)^`stall_power`
    // (0: `stall`, whatever the queue)
    pub stall_queue: &'a [f64],
    // a call's draws in [0, 1) for whether its stall comes, after its work under the lock and as
    // its handler wakes for it: it does when the draw is under min(1, the run queue then /
    // `stall_queue`); below 0 (or where `stall_queue` is 0): whenever `contended`
    pub gate: &'a [f64],
    pub gate_wake: &'a [f64],
    pub net: &'a [f64],
    pub lock: &'a [u8],
    pub s_lock: &'a [f64],
    pub s_post: &'a [f64],
    pub sync: &'a [u8], // not 0: a write's RPC, whose answer waits for an edit-log sync
    pub rpcs: &'a [u8],
    pub client: &'a [u32], // the client whose slots the call takes (a run's worker)
    // the host's other work: the k-th run comes `other_gap[k % n]` after the one before (the
    // first after the first call's arrival) and holds a core for `other_run[k % n]`; empty: none
    pub other_gap: &'a [f64],
    pub other_run: &'a [f64],
    // a slow sync's extra for each write RPC: the call's RPC with `k` more to make after it at
    // `call * MAX_RPCS + k`; a sync lasts `sync_s` plus the longest extra among its edits; empty:
    // none slow
    pub sync_slow: &'a [f64],
}

/// The most RPCs a call makes (`sync_slow`'s stride; `mimesisbench.sim.model.MAX_RPCS`).
pub const MAX_RPCS: usize = 2;

#[derive(Clone, Copy)]
pub struct Settings {
    pub outstanding: usize,
    pub handlers: usize,
    pub cores: usize,
    pub colocated: bool,
    pub sync_s: f64,
    pub fair: bool,
    pub wake_s: f64,
    pub park_s: f64,
    pub async_edits: bool,
    pub dispatch_s: f64,
    pub edit_s: f64,
    pub stall_power: f64,
    // the chance that a burst woken while the host's other work runs is placed behind a run of
    // it, whether or not another core is free; below 0: none given (a free core is taken, and
    // with none free the bursts are placed on the cores in turn)
    pub other_place: f64,
}

struct Sim<'a> {
    calls: Calls<'a>,
    set: Settings,
    heap: BinaryHeap<Event>,
    seq: u64,
    now: f64,
    start: Vec<f64>,
    end: Vec<f64>,
    wait_lock: Vec<f64>,
    // calls between their arrival at the NameNode and their handler's release; client CPU bursts
    // started or waiting for a core (a station with none is idle: the next call pays its wake-up)
    at_server: usize,
    client_busy: usize,
    client_last_end: f64,
    server_last_end: f64,
    // wake-ups each call paid: the client's (0-2: its send, its receive) and the NameNode's (0-1)
    c_woke: Vec<u8>,
    s_woke: Vec<u8>,
    h_woke: Vec<u8>,
    // times each call's handler parked for the namesystem lock (and paid `park_s` when woken)
    parks: Vec<u8>,
    // each client's slots: free, and the calls waiting for one
    slots_free: Vec<usize>,
    slot_queue: Vec<VecDeque<usize>>,
    // handlers
    handlers_free: usize,
    call_queue: VecDeque<usize>,
    // cores: (call, duration, step after, the switch to its thread if it waits, when it asked)
    cores_free: usize,
    core_queue: VecDeque<(usize, f64, Step, f64, f64)>,
    // how long bursts waited for a core in all, the switch to their threads included
    core_wait: f64,
    // the core of the burst that just ended, kept for its thread's next burst in the same step
    spare: bool,
    // the namesystem lock
    readers: usize,
    writer: bool,
    lock_queue: VecDeque<usize>,
    waking: bool, // the queue's head was woken and is on its way (its wake event is pending)
    asked_at: Vec<f64>,
    queue: usize, // bursts waiting for a core as the current event comes due (the run queue)
    // each call's stall as it started (its length scaled by the run queue) and the run queue as
    // its handler was done with its work under the lock (its last pass)
    stall_len: Vec<f64>,
    queue_seen: Vec<u32>,
    // the call's stall was spent in this pass, at its wake-up from a park for the lock
    stalled: Vec<bool>,
    // the edit log: whether a call is in a sync now; whether its handler is done with it
    // (asynchronous edit logging: the answer waits for both)
    // passes through the NameNode each call still makes after this one (a create: two RPCs)
    passes_left: Vec<u8>,
    in_sync: Vec<bool>,
    handler_done: Vec<bool>,
    syncing: bool,
    next_batch: Vec<usize>,
    batch: Vec<usize>,
    // the longest slow-sync extra among the edits waiting for the next sync
    next_extra: f64,
    // the edit-log thread's answers still to send after the sync that just ended (`edit_s` each)
    answering: VecDeque<usize>,
    // the host's other work: its runs holding a core now; the bursts placed behind one (they
    // wait for it to end, whatever other core is freed); bursts that found no core free while
    // one ran (one in `cores` of them, in turn, is placed behind); calls ended
    other_running: usize,
    other_waiting: usize, // runs waiting for a core (at the run queue's head)
    behind: VecDeque<(usize, f64, Step, f64, f64)>,
    placed: usize,
    // the placements by chance so far, as a running sum of `other_place`: a burst is placed
    // behind the other work each time it passes a whole number (deterministic, no draw: the
    // simpy reference keeps the same sum)
    place_sum: f64,
    ended: usize,
}

impl<'a> Sim<'a> {
    fn new(calls: Calls<'a>, set: Settings) -> Self {
        let n = calls.arrive.len();
        let passes_left = calls.rpcs.iter().map(|&r| r.max(1) - 1).collect();
        let clients = calls.client.iter().max().map_or(1, |&c| c as usize + 1);
        let slots = if set.outstanding == 0 { usize::MAX } else { set.outstanding };
        Sim {
            calls,
            set,
            heap: BinaryHeap::with_capacity(1024),
            seq: 0,
            now: 0.0,
            start: vec![f64::NAN; n],
            end: vec![f64::NAN; n],
            wait_lock: vec![0.0; n],
            at_server: 0,
            client_busy: 0,
            client_last_end: f64::NEG_INFINITY,
            server_last_end: f64::NEG_INFINITY,
            c_woke: vec![0; n],
            s_woke: vec![0; n],
            h_woke: vec![0; n],
            parks: vec![0; n],
            slots_free: vec![slots; clients],
            slot_queue: vec![VecDeque::new(); clients],
            handlers_free: set.handlers,
            call_queue: VecDeque::new(),
            cores_free: if set.cores == 0 { usize::MAX } else { set.cores },
            core_queue: VecDeque::new(),
            core_wait: 0.0,
            spare: false,
            readers: 0,
            writer: false,
            lock_queue: VecDeque::new(),
            waking: false,
            asked_at: vec![0.0; n],
            queue: 0,
            stall_len: vec![0.0; n],
            queue_seen: vec![0; n],
            stalled: vec![false; n],
            passes_left,
            in_sync: vec![false; n],
            handler_done: vec![false; n],
            syncing: false,
            next_batch: Vec::new(),
            batch: Vec::new(),
            next_extra: 0.0,
            answering: VecDeque::new(),
            other_running: 0,
            other_waiting: 0,
            behind: VecDeque::new(),
            placed: 0,
            place_sum: 0.0,
            ended: 0,
        }
    }

    fn at(&mut self, t: f64, call: usize, step: Step, core: bool) {
        self.seq += 1;
        self.heap.push(Event { t, seq: self.seq, call, step, core });
    }

    /// A CPU burst of `d` seconds, then `next`; a client's burst only takes a core when colocated.
    fn cpu(&mut self, call: usize, d: f64, next: Step, server: bool) {
        self.cpu_after(call, d, next, server, self.set.dispatch_s);
    }

    /// The burst of a thread the lock was handed to: its wake-up is the hand-over's (`wake_s`),
    /// so it does not pay the switch again if it waits for a core.
    fn cpu_handed(&mut self, call: usize, d: f64, next: Step) {
        self.cpu_after(call, d, next, true, 0.0);
    }

    /// A burst that, if it waits for a core, starts `switch` after the core is freed.
    fn cpu_after(&mut self, call: usize, d: f64, next: Step, server: bool, switch: f64) {
        if !server && !self.set.colocated {
            self.at(self.now + d, call, next, false);
        } else if self.spare && self.other_waiting == 0 {
            // the thread goes on running: it keeps its core (unless the host's other work waits
            // for one: then the core is the other work's at the end of the step, and the thread
            // waits for a core again)
            self.spare = false;
            self.at(self.now + d, call, next, true);
        } else if self.other_running > 0 && self.placed_behind() {
            self.behind.push_back((call, d, next, switch, self.now));
        } else if self.cores_free > 0 {
            if self.set.cores != 0 {
                self.cores_free -= 1;
            }
            self.at(self.now + d, call, next, self.set.cores != 0);
        } else {
            self.core_queue.push_back((call, d, next, switch, self.now));
        }
    }

    /// Whether a burst woken while the host's other work runs is placed behind a run of it: by
    /// chance (`other_place`), a core free or not; or, without one, never while a core is free,
    /// and with none free the bursts are placed on the cores in turn, those that land on one of
    /// the `other_running` cores the other work holds waiting for it.
    fn placed_behind(&mut self) -> bool {
        if self.set.other_place >= 0.0 {
            return self.placed_by_chance();
        }
        if self.cores_free > 0 {
            return false;
        }
        let core = self.placed % self.set.cores;
        self.placed += 1;
        core < self.other_running
    }

    /// Placed behind by chance: every time the running sum of `other_place` passes a whole number.
    fn placed_by_chance(&mut self) -> bool {
        if self.set.other_place <= 0.0 {
            return false;
        }
        let before = self.place_sum.floor();
        self.place_sum += self.set.other_place;
        self.place_sum.floor() > before
    }

    /// The k-th run of the host's other work comes due: it takes a free core, or the next one freed
    /// or that a thread would run on with (its burst done: a scheduler's preemption, at the model's
    /// grain), and the next is due `other_gap` later, as long as calls remain.
    fn other_arrive(&mut self, k: usize) {
        let n = self.calls.other_gap.len();
        if self.ended == self.calls.arrive.len() {
            return;
        }
        if self.cores_free > 0 {
            self.cores_free -= 1;
            self.other_running += 1;
            self.at(self.now + self.calls.other_run[k % n], k, Step::OtherDone, true);
        } else {
            // it goes first: the next core freed, or the core of the next thread that would run on
            self.other_waiting += 1;
            self.core_queue.push_front((k, 0.0, Step::OtherStart, self.set.dispatch_s, self.now));
        }
        self.at(self.now + self.calls.other_gap[(k + 1) % n], k + 1, Step::OtherArrive, false);
    }

    /// A run of the host's other work ends: the bursts placed behind a run go first (in order),
    /// then the run queue's.
    fn other_done(&mut self) {
        self.other_running -= 1;
        while let Some(waiting) = self.behind.pop_back() {
            self.core_queue.push_front(waiting);
        }
        self.free_core();
        // those placed behind while another core was free take the free cores
        while self.cores_free > 0 && !self.core_queue.is_empty() {
            self.cores_free -= 1;
            self.free_core();
        }
    }

    fn free_core(&mut self) {
        if let Some((call, d, next, switch, asked)) = self.core_queue.pop_front() {
            if next == Step::OtherStart {
                self.other_waiting -= 1;
            }
            // it waited for the core: the switch to its thread first, the core idle meanwhile
            self.core_wait += self.now - asked + switch;
            self.at(self.now + switch + d, call, next, true);
        } else {
            self.cores_free += 1;
        }
    }

    fn compatible(&self, kind: u8) -> bool {
        if kind == WRITE {
            !self.writer && self.readers == 0
        } else {
            !self.writer
        }
    }

    /// The lock taken; `park`: the CPU its thread still spends waking from a park for it first;
    /// `woken`: its thread was woken for it (it does not pay the switch to it again).
    fn take_lock(&mut self, call: usize, park: f64, woken: bool) {
        if self.calls.lock[call] == WRITE {
            self.writer = true;
        } else {
            self.readers += 1;
        }
        self.wait_lock[call] += self.now - self.asked_at[call];
        let d = park + self.calls.s_lock[call];
        if woken {
            self.cpu_handed(call, d, Step::LockWork);
        } else {
            self.cpu(call, d, Step::LockWork, true);
        }
    }

    /// A thread parked for the lock is woken: it counts the park, and spends `park_s` of CPU.
    fn unpark(&mut self, call: usize) -> f64 {
        self.parks[call] = self.parks[call].saturating_add(1);
        self.set.park_s
    }

    /// A handler asks for the lock. Fair: only when nobody waits (the queue is FIFO). Not fair:
    /// whenever the lock allows it, except a reader behind a waiting writer (Java's
    /// `readerShouldBlock` in its non-fair mode).
    fn ask_lock(&mut self, call: usize) {
        self.asked_at[call] = self.now;
        let kind = self.calls.lock[call];
        if kind == NONE {
            let d = self.calls.s_lock[call];
            self.cpu(call, d, Step::LockWork, true);
            return;
        }
        let may = if self.set.fair {
            self.lock_queue.is_empty() && self.compatible(kind)
        } else {
            let head_writer = self.lock_queue.front().is_some_and(|&h| self.calls.lock[h] == WRITE);
            self.compatible(kind) && !(kind == READ && head_writer)
        };
        if may {
            self.take_lock(call, 0.0, false);
        } else {
            self.lock_queue.push_back(call);
        }
    }

    /// After a release: wake the queue's head when it could take the lock. Fair: the lock is
    /// reserved for it (and a run of readers behind it); they start after `wake_s`. Not fair: the
    /// head is woken and tries again after `wake_s`; meanwhile anyone may barge in.
    fn hand_over(&mut self) {
        if self.waking {
            return;
        }
        let Some(&head) = self.lock_queue.front() else { return };
        if !self.compatible(self.calls.lock[head]) {
            return;
        }
        if self.set.fair {
            // grant now (so nobody else can), the work starts once the thread is awake
            while let Some(&h) = self.lock_queue.front() {
                let kind = self.calls.lock[h];
                if !self.compatible(kind) {
                    break;
                }
                self.lock_queue.pop_front();
                if kind == WRITE {
                    self.writer = true;
                } else {
                    self.readers += 1;
                }
                self.at(self.now + self.set.wake_s, h, Step::Woken, false);
                if kind == WRITE {
                    break;
                }
            }
        } else {
            self.waking = true;
            self.at(self.now + self.set.wake_s, head, Step::Woken, false);
        }
    }

    /// Whether at least `cores` bursts wait for a core as the current event comes due (twice as
    /// many threads runnable as cores: a thread would be descheduled).
    fn contended(&self) -> bool {
        self.queue >= self.set.cores.max(1)
    }

    /// Whether a call drawn to stall does so now: with the chance min(1, run queue / its
    /// `stall_queue`) where it has a draw `u` for it (a write's), else whenever `contended`.
    fn stalls_now(&self, call: usize, u: f64) -> bool {
        let per = self.calls.stall_queue[call];
        if u >= 0.0 && per > 0.0 {
            u < (self.queue as f64 / per).min(1.0)
        } else {
            self.contended()
        }
    }

    /// A stall after the work under the lock, as it starts: its length scaled by the run queue
    /// now, where the call gives the queue its length is for.
    fn scaled(&self, call: usize, stall: f64) -> f64 {
        let per = self.calls.stall_queue[call];
        if per > 0.0 {
            stall * (self.queue as f64 / per).powf(self.set.stall_power)
        } else {
            stall
        }
    }

    /// A thread parked for the lock is woken: descheduled first if its call stalls there and
    /// the cores are wanted (once per pass), then awake.
    fn woken(&mut self, call: usize) {
        let stall = self.calls.stall_wake[call];
        if stall > 0.0 && !self.stalled[call] && self.stalls_now(call, self.calls.gate_wake[call]) {
            // descheduled as it wakes (its stall, once per pass): fair, the lock reserved for it
            // waits; not fair, anyone may take it meanwhile
            self.stalled[call] = true;
            self.at(self.now + stall, call, Step::WokenLate, false);
            return;
        }
        self.woken_now(call);
    }

    /// The woken thread runs: it counts its park and spends its wake-up CPU.
    fn woken_now(&mut self, call: usize) {
        let park = self.unpark(call);
        if self.set.fair {
            // the lock was granted at hand-over: it waits for the thread's wake-up CPU too
            self.wait_lock[call] += self.now - self.asked_at[call];
            let d = park + self.calls.s_lock[call];
            self.cpu_handed(call, d, Step::LockWork);
        } else if park > 0.0 {
            // not fair: the thread wakes (CPU, on a core; the lock is anyone's meanwhile), then
            // tries again
            self.cpu_handed(call, park, Step::Retry);
        } else {
            self.retry(call);
        }
    }

    /// Not fair: a woken waiter, awake, tries the lock again.
    fn retry(&mut self, call: usize) {
        self.waking = false;
        let kind = self.calls.lock[call];
        if self.compatible(kind) {
            self.lock_queue.pop_front(); // it is the head
            self.take_lock(call, 0.0, true); // its wake-up is paid
            // readers right behind it go too (AQS propagates a shared acquire), each waking
            while let Some(&h) = self.lock_queue.front() {
                if self.calls.lock[h] != READ || !self.compatible(READ) {
                    break;
                }
                self.lock_queue.pop_front();
                let park = self.unpark(h);
                self.take_lock(h, park, true);
            }
        }
        // else it stays at the head and is woken again at the next release
        self.hand_over();
    }

    fn release(&mut self, call: usize) {
        match self.calls.lock[call] {
            WRITE => self.writer = false,
            READ => self.readers -= 1,
            _ => return,
        }
        self.hand_over();
    }

    /// The share of a call's NameNode work done under the lock (a stall's share with the lock held).
    fn locked_share(&self, call: usize) -> f64 {
        let (held, after) = (self.calls.s_lock[call], self.calls.s_post[call]);
        if held + after > 0.0 { held / (held + after) } else { 0.5 }
    }

    /// The lock's work done (and any stall): release it, then the edit log or the rest of the CPU.
    fn after_lock(&mut self, call: usize) {
        self.release(call);
        self.after_release(call);
    }

    /// The edit log (a write) or the rest of the CPU.
    fn after_release(&mut self, call: usize) {
        if self.set.async_edits {
            // the edit is queued: its sync starts while the handler does the rest of its work
            self.next_sync(call);
        } else if self.next_sync(call) {
            return; // the handler waits for the sync
        }
        let d = self.calls.s_post[call];
        self.cpu(call, d, Step::PostDone, true);
    }

    /// The call joins the edit log's next sync if it is a write's RPC; false if not.
    fn next_sync(&mut self, call: usize) -> bool {
        if self.calls.sync[call] == 0 {
            return false;
        }
        self.join_sync(call);
        true
    }

    /// The answer goes back to the client.
    fn answer(&mut self, call: usize) {
        let d = self.calls.net[call] * 0.5;
        self.at(self.now + d, call, Step::Back, false);
    }

    fn join_sync(&mut self, call: usize) {
        self.in_sync[call] = true;
        let extra = self.slow_extra(call);
        if self.syncing {
            self.next_batch.push(call);
            self.next_extra = self.next_extra.max(extra);
        } else {
            self.syncing = true;
            self.batch.push(call);
            self.at(self.now + (self.set.sync_s + extra), 0, Step::SyncDone, false);
        }
    }

    /// The slow-sync extra of the call's RPC now joining the edit log (0: none).
    fn slow_extra(&self, call: usize) -> f64 {
        let at = call * MAX_RPCS + self.passes_left[call] as usize;
        self.calls.sync_slow.get(at).copied().unwrap_or(0.0)
    }

    fn sync_done(&mut self) {
        let done = std::mem::take(&mut self.batch);
        if self.set.async_edits && self.set.edit_s > 0.0 {
            // the edit-log thread sends each answer of the batch itself, one after the other, on
            // a core it takes after the sync's I/O, before it dequeues the next edits
            self.answering = done.into();
            self.send_next_answer();
            return;
        }
        for call in done {
            self.at(self.now, call, Step::Synced, false);
        }
        self.next_sync_batch();
    }

    /// The edit-log thread's next answer (a burst of `edit_s` on the core it runs on), or, all
    /// sent, its next sync.
    fn send_next_answer(&mut self) {
        if let Some(&call) = self.answering.front() {
            self.cpu(call, self.set.edit_s, Step::Responded, true);
        } else {
            self.next_sync_batch();
        }
    }

    /// The sync of the writes that joined during the last one, if any; else the edit log idles.
    fn next_sync_batch(&mut self) {
        if self.next_batch.is_empty() {
            self.syncing = false;
        } else {
            self.batch = std::mem::take(&mut self.next_batch);
            let extra = std::mem::take(&mut self.next_extra);
            self.at(self.now + (self.set.sync_s + extra), 0, Step::SyncDone, false);
        }
    }

    /// A call that finds a handler parked on the empty call queue wakes it (and pays for it); one
    /// taken from the queue by a handler that has just finished another does not.
    fn enter_handler(&mut self, call: usize) {
        if self.handlers_free > 0 {
            self.handlers_free -= 1;
            self.h_woke[call] += 1;
            let d = self.calls.h_wake[call];
            if d > 0.0 {
                self.cpu(call, d, Step::HandlerAwake, true);
            } else {
                self.ask_lock(call);
            }
        } else {
            self.call_queue.push_back(call);
        }
    }

    fn take_slot(&mut self, call: usize) {
        self.start[call] = self.now;
        self.send(call);
    }

    /// The client sends an RPC of the call (its first, or the next of an operation of several).
    fn send(&mut self, call: usize) {
        let d = self.calls.c_send[call] + self.client_wake(call);
        self.client_busy += 1;
        self.cpu(call, d, Step::Sent, false);
    }

    /// A client thread idle for longer than its spin window pays its wake-up (CPU) on the burst
    /// that ends its idleness (one that follows another within the window, the next send after a
    /// receive above all, continues its work).
    fn client_wake(&mut self, call: usize) -> f64 {
        if self.client_busy == 0 && self.now - self.client_last_end > self.calls.c_spin[call] {
            self.c_woke[call] += 1;
            self.calls.c_wake[call]
        } else {
            0.0
        }
    }

    fn advance(&mut self, ev: Event) {
        self.now = ev.t;
        // the run queue as this burst ends (`contended` reads it)
        self.queue = self.core_queue.len() + self.behind.len();
        // a thread whose burst ends goes on with its next burst on the same core, if it starts one
        // in this step (not the NameNode's threads woken beside a call; the host's other work
        // frees or keeps its core itself)
        if ev.core {
            match ev.step {
                Step::Beside => self.free_core(),
                Step::OtherStart | Step::OtherDone => {}
                _ => self.spare = true,
            }
        }
        let call = ev.call;
        match ev.step {
            Step::Arrive => {
                let client = self.calls.client[call] as usize;
                if self.slots_free[client] > 0 {
                    if self.set.outstanding != 0 {
                        self.slots_free[client] -= 1;
                    }
                    self.take_slot(call);
                } else {
                    self.slot_queue[client].push_back(call);
                }
            }
            Step::Sent => {
                self.client_busy -= 1;
                self.client_last_end = self.now;
                let d = self.calls.net[call] * 0.5;
                self.at(self.now + d, call, Step::AtServer, false);
            }
            Step::AtServer => {
                let idle = self.at_server == 0 && self.now - self.server_last_end > self.calls.s_spin[call];
                self.at_server += 1;
                if idle {
                    // the NameNode's threads had parked: waking them is this call's cost
                    self.s_woke[call] += 1;
                }
                let d = self.calls.s_wake[call];
                if idle && d > 0.0 {
                    // spent by the NameNode's other threads (the reader, the responder, the edit
                    // log's): it takes a core, the call does not wait for it
                    self.cpu(call, d, Step::Beside, true);
                }
                self.enter_handler(call);
            }
            Step::HandlerAwake => self.ask_lock(call),
            Step::Woken => self.woken(call),
            Step::WokenLate => self.woken_now(call),
            Step::Retry => self.retry(call),
            Step::LockWork => {
                let stall = self.calls.stall[call];
                let used = std::mem::take(&mut self.stalled[call]);
                self.queue_seen[call] = self.queue as u32;
                if stall > 0.0 && !used && self.stalls_now(call, self.calls.gate[call]) {
                    let stall = self.scaled(call, stall);
                    self.stall_len[call] = stall;
                    // another burst wants a core (and it did not stall as it woke in this pass):
                    // its handler is descheduled, with the lock held
                    // for the share of the stall that its work under the lock has of its work
                    // (every call behind it for the lock waits too), then after releasing it
                    self.at(self.now + stall * self.locked_share(call), call, Step::StallHeld, false);
                } else {
                    self.after_lock(call);
                }
            }
            Step::Synced => {
                self.in_sync[call] = false;
                if self.set.async_edits {
                    if self.handler_done[call] {
                        self.answer(call);
                    } // else its handler answers when done
                } else {
                    let d = self.calls.s_post[call];
                    self.cpu(call, d, Step::PostDone, true);
                }
            }
            Step::SyncDone => self.sync_done(),
            Step::Responded => {
                // this answer is sent: it leaves now if its handler is done with the call
                self.answering.pop_front();
                self.in_sync[call] = false;
                if self.handler_done[call] {
                    self.answer(call);
                }
                self.send_next_answer();
            }
            Step::StallHeld => {
                self.release(call);
                let rest = self.stall_len[call] * (1.0 - self.locked_share(call));
                self.at(self.now + rest, call, Step::Stalled, false);
            }
            Step::Stalled => self.after_release(call),
            Step::Beside => {} // a burst beside the call: only its core was to be freed
            Step::OtherArrive => self.other_arrive(call),
            Step::OtherStart => {
                // a run that waited for a core has it now
                self.other_running += 1;
                let n = self.calls.other_run.len();
                self.at(self.now + self.calls.other_run[call % n], call, Step::OtherDone, true);
            }
            Step::OtherDone => self.other_done(),
            Step::PostDone => {
                self.at_server -= 1;
                self.server_last_end = self.now;
                if let Some(next) = self.call_queue.pop_front() {
                    self.ask_lock(next);
                } else {
                    self.handlers_free += 1;
                }
                // with asynchronous edit logging the answer waits for the edit's syncs too
                self.handler_done[call] = true;
                if !self.in_sync[call] {
                    self.answer(call);
                }
            }
            Step::Back => {
                let d = self.calls.c_recv[call] + self.client_wake(call);
                self.client_busy += 1;
                self.cpu(call, d, Step::Received, false);
            }
            Step::Received => {
                self.client_busy -= 1;
                self.client_last_end = self.now;
                if self.passes_left[call] > 0 {
                    // the operation's next RPC (a create's complete), on the same slot
                    self.passes_left[call] -= 1;
                    self.handler_done[call] = false;
                    self.send(call);
                    return;
                }
                self.end[call] = self.now;
                self.ended += 1;
                let client = self.calls.client[call] as usize;
                if let Some(next) = self.slot_queue[client].pop_front() {
                    self.take_slot(next);
                } else if self.set.outstanding != 0 {
                    self.slots_free[client] += 1;
                }
            }
        }
    }

    /// An event, and the core its burst ended on freed if its thread did not go on with another.
    fn step(&mut self, ev: Event) {
        self.advance(ev);
        if self.spare {
            // the thread goes idle (or waits): its core is the next burst's
            self.spare = false;
            self.free_core();
        }
    }

    /// Arrivals are fed one at a time (the heap holds only what is in flight).
    fn run(&mut self) {
        let n = self.calls.arrive.len();
        let mut next = 0usize;
        if n > 0 && self.set.cores != 0 && !self.calls.other_gap.is_empty() {
            self.at(self.calls.arrive[0] + self.calls.other_gap[0], 0, Step::OtherArrive, false);
        }
        loop {
            let due = if next < n { self.calls.arrive[next] } else { f64::INFINITY };
            match self.heap.peek() {
                Some(ev) if ev.t <= due => {
                    let ev = self.heap.pop().expect("peeked");
                    self.step(ev);
                }
                _ if next < n => {
                    self.seq += 1;
                    let ev = Event { t: due, seq: self.seq, call: next, step: Step::Arrive, core: false };
                    next += 1;
                    self.step(ev);
                }
                _ => break,
            }
        }
    }
}

/// Per call: start, end, lock wait, and the wake-ups it paid: the client's, the NameNode's, its
/// handler's, its handler's parks for the lock, and the run queue as its handler was done with
/// its work under the lock; then how long bursts waited for a core in all.
pub type Outcome = (Vec<f64>, Vec<f64>, Vec<f64>, Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>, Vec<u32>, f64);

pub fn simulate(calls: Calls<'_>, set: Settings) -> Outcome {
    let mut sim = Sim::new(calls, set);
    sim.run();
    (sim.start, sim.end, sim.wait_lock, sim.c_woke, sim.s_woke, sim.h_woke, sim.parks, sim.queue_seen, sim.core_wait)
}

fn slice<'a, T: numpy::Element>(a: &'a PyReadonlyArray1<'_, T>, name: &str, n: usize) -> PyResult<&'a [T]> {
    let s = a.as_slice().map_err(|_| PyValueError::new_err(format!("simulate_namenode: {name} must be contiguous")))?;
    if s.len() != n {
        return Err(PyValueError::new_err(format!("simulate_namenode: {name} has {} values, expected {n}", s.len())));
    }
    Ok(s)
}

type Times<'py> = (
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<u8>>,
    Bound<'py, PyArray1<u8>>,
    Bound<'py, PyArray1<u8>>,
    Bound<'py, PyArray1<u8>>,
    Bound<'py, PyArray1<u32>>,
    f64,
);

/// Simulate the calls; returns (start, end, lock wait) per call, in seconds, the wake-ups each
/// call paid (the client's, the NameNode's, its handler's), its handler's parks for the lock and
/// the run queue as its handler was done with its work under the lock (its last pass), and the
/// seconds bursts waited for a core in all (the switch to their threads included).
/// `stall_wake`: each call's stall as its handler wakes for the lock; `stall_queue`: the run
/// queue each call's `stall` is the length for (0: unscaled), and `stall_power` how its length
/// scales with the queue; `client`: the client of each call (all one client when absent), each
/// with `outstanding` slots. `sync_slow`: each write RPC's slow-sync extra (`Calls::sync_slow`;
/// `n * MAX_RPCS` of them), absent: none.
#[pyfunction]
#[pyo3(signature = (arrive, c_send, c_recv, c_wake, c_spin, s_wake, h_wake, stall, net, lock, s_lock, s_post, sync, rpcs, *, outstanding, handlers, cores, colocated, sync_s, fair, wake_s, park_s, async_edits, stall_wake, stall_queue, stall_power, dispatch_s=0.0, edit_s=0.0, client=None, s_spin=None, stall_gate=None, stall_gate_wake=None, other_gap=None, other_run=None, other_place=-1.0, sync_slow=None))]
#[allow(clippy::too_many_arguments)]
fn simulate_namenode<'py>(
    py: Python<'py>,
    arrive: PyReadonlyArray1<'py, f64>,
    c_send: PyReadonlyArray1<'py, f64>,
    c_recv: PyReadonlyArray1<'py, f64>,
    c_wake: PyReadonlyArray1<'py, f64>,
    c_spin: PyReadonlyArray1<'py, f64>,
    s_wake: PyReadonlyArray1<'py, f64>,
    h_wake: PyReadonlyArray1<'py, f64>,
    stall: PyReadonlyArray1<'py, f64>,
    net: PyReadonlyArray1<'py, f64>,
    lock: PyReadonlyArray1<'py, u8>,
    s_lock: PyReadonlyArray1<'py, f64>,
    s_post: PyReadonlyArray1<'py, f64>,
    sync: PyReadonlyArray1<'py, u8>,
    rpcs: PyReadonlyArray1<'py, u8>,
    outstanding: usize,
    handlers: usize,
    cores: usize,
    colocated: bool,
    sync_s: f64,
    fair: bool,
    wake_s: f64,
    park_s: f64,
    async_edits: bool,
    stall_wake: PyReadonlyArray1<'py, f64>,
    stall_queue: PyReadonlyArray1<'py, f64>,
    stall_power: f64,
    dispatch_s: f64,
    edit_s: f64,
    client: Option<PyReadonlyArray1<'py, u32>>,
    s_spin: Option<PyReadonlyArray1<'py, f64>>,
    stall_gate: Option<PyReadonlyArray1<'py, f64>>,
    stall_gate_wake: Option<PyReadonlyArray1<'py, f64>>,
    other_gap: Option<PyReadonlyArray1<'py, f64>>,
    other_run: Option<PyReadonlyArray1<'py, f64>>,
    other_place: f64,
    sync_slow: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<Times<'py>> {
    let n = arrive.len()?;
    let one_client = vec![0u32; if client.is_none() { n } else { 0 }];
    let no_spin = vec![0.0f64; if s_spin.is_none() { n } else { 0 }];
    let no_gate = vec![-1.0f64; if stall_gate.is_none() || stall_gate_wake.is_none() { n } else { 0 }];
    if handlers == 0 {
        return Err(PyValueError::new_err("simulate_namenode: handlers must be at least 1"));
    }
    let calls = Calls {
        arrive: slice(&arrive, "arrive", n)?,
        c_send: slice(&c_send, "c_send", n)?,
        c_recv: slice(&c_recv, "c_recv", n)?,
        c_wake: slice(&c_wake, "c_wake", n)?,
        c_spin: slice(&c_spin, "c_spin", n)?,
        s_wake: slice(&s_wake, "s_wake", n)?,
        s_spin: match &s_spin {
            Some(s) => slice(s, "s_spin", n)?,
            None => &no_spin,
        },
        h_wake: slice(&h_wake, "h_wake", n)?,
        stall: slice(&stall, "stall", n)?,
        stall_wake: slice(&stall_wake, "stall_wake", n)?,
        stall_queue: slice(&stall_queue, "stall_queue", n)?,
        gate: match &stall_gate {
            Some(g) => slice(g, "stall_gate", n)?,
            None => &no_gate,
        },
        gate_wake: match &stall_gate_wake {
            Some(g) => slice(g, "stall_gate_wake", n)?,
            None => &no_gate,
        },
        net: slice(&net, "net", n)?,
        lock: slice(&lock, "lock", n)?,
        s_lock: slice(&s_lock, "s_lock", n)?,
        s_post: slice(&s_post, "s_post", n)?,
        sync: slice(&sync, "sync", n)?,
        rpcs: slice(&rpcs, "rpcs", n)?,
        client: match &client {
            Some(c) => slice(c, "client", n)?,
            None => &one_client,
        },
        other_gap: match (&other_gap, &other_run) {
            (Some(g), Some(_)) => slice(g, "other_gap", n)?,
            (None, None) => &[],
            _ => return Err(PyValueError::new_err("simulate_namenode: other_gap and other_run come together")),
        },
        other_run: match &other_run {
            Some(r) if other_gap.is_some() => slice(r, "other_run", n)?,
            _ => &[],
        },
        sync_slow: match &sync_slow {
            Some(x) => slice(x, "sync_slow", n * MAX_RPCS)?,
            None => &[],
        },
    };
    if calls.sync_slow.iter().any(|&x| !(x.is_finite() && x >= 0.0)) {
        return Err(PyValueError::new_err("simulate_namenode: sync_slow must be finite and >= 0"));
    }
    if calls.other_gap.iter().any(|&g| !(g.is_finite() && g > 0.0)) || calls.other_run.iter().any(|&r| !(r.is_finite() && r >= 0.0)) {
        return Err(PyValueError::new_err("simulate_namenode: other_gap must be finite and > 0, other_run finite and >= 0"));
    }
    if calls.arrive.windows(2).any(|w| !matches!(w[0].partial_cmp(&w[1]), Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal))) {
        return Err(PyValueError::new_err("simulate_namenode: arrive must be sorted and finite"));
    }
    if calls.client.iter().any(|&c| c >= MAX_CLIENTS) {
        return Err(PyValueError::new_err(format!("simulate_namenode: client must be below {MAX_CLIENTS}")));
    }
    if calls.lock.iter().any(|&k| k > WRITE) {
        return Err(PyValueError::new_err("simulate_namenode: lock must be 0 (none), 1 (read) or 2 (write)"));
    }
    if !(dispatch_s.is_finite() && dispatch_s >= 0.0) {
        return Err(PyValueError::new_err("simulate_namenode: dispatch_s must be a finite duration >= 0"));
    }
    if !(edit_s.is_finite() && edit_s >= 0.0) {
        return Err(PyValueError::new_err("simulate_namenode: edit_s must be a finite duration >= 0"));
    }
    if calls.gate.iter().chain(calls.gate_wake.iter()).any(|&u| u.is_nan() || u >= 1.0) {
        return Err(PyValueError::new_err("simulate_namenode: stall_gate and stall_gate_wake must be below 1 (below 0: no draw)"));
    }
    if !(other_place.is_finite() && other_place <= 1.0) {
        return Err(PyValueError::new_err("simulate_namenode: other_place must be a chance, 0 to 1 (below 0: none)"));
    }
    if !(stall_power.is_finite() && stall_power >= 0.0) {
        return Err(PyValueError::new_err("simulate_namenode: stall_power must be a finite number >= 0"));
    }
    let set = Settings {
        outstanding,
        handlers,
        cores,
        colocated,
        sync_s,
        fair,
        wake_s,
        park_s,
        async_edits,
        dispatch_s,
        edit_s,
        stall_power,
        other_place,
    };
    let (start, end, wait, c_woke, s_woke, h_woke, parks, queue, core_wait) = py.detach(|| simulate(calls, set));
    Ok((
        start.into_pyarray(py),
        end.into_pyarray(py),
        wait.into_pyarray(py),
        c_woke.into_pyarray(py),
        s_woke.into_pyarray(py),
        h_woke.into_pyarray(py),
        parks.into_pyarray(py),
        queue.into_pyarray(py),
        core_wait,
    ))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simulate_namenode, m)?)?;
    Ok(())
}
