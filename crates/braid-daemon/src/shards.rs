//! The server's cores (issue 13): one thread per receive socket, each running a
//! single-threaded tokio runtime — thread per core, as Seastar and glommio run. A shard runs
//! its socket's receive loop and the sessions given to it, each session whole: its driver
//! and the tasks of its streams (TCP splices), which the driver spawns where it runs. The
//! hand-offs between a driver and its streams — every run of stream bytes, every window
//! update — then never wake another thread. On one work-stealing runtime they did: a session
//! over loopback moved 7.05 Gbit/s at 1.56 CPU-s/GB with two worker threads against 8.29 at
//! 1.33 with one (`BRAID_THREADS=1 bench/loopback.sh --download`, three runs each).

use std::io;
use std::thread::JoinHandle;
use tokio::runtime::{Builder, Handle};
use tokio::sync::oneshot;

/// Running shards; dropping them stops every shard (the tasks on it are dropped).
pub struct Shards {
    handles: Vec<Handle>,
    /// Tells each shard's thread to return (and drop its runtime and tasks).
    stops: Vec<oneshot::Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

impl Shards {
    /// Starts `count` shards (at least one), threads named `braid-shard-N`. Each runtime is
    /// built on its own thread and never leaves it: one dropped inside a task (a thread that
    /// could not be started, in a server starting up) would panic. On an error the shards
    /// started so far stop.
    pub fn start(count: usize) -> io::Result<Shards> {
        let mut shards = Shards { handles: Vec::new(), stops: Vec::new(), threads: Vec::new() };
        for i in 0..count.max(1) {
            let (stop_tx, stop_rx) = oneshot::channel::<()>();
            let (handle_tx, handle_rx) = std::sync::mpsc::channel();
            let thread = std::thread::Builder::new().name(format!("braid-shard-{i}")).spawn(move || {
                let runtime = match Builder::new_current_thread().enable_all().build() {
                    Ok(rt) => rt,
                    Err(e) => return drop(handle_tx.send(Err(e))),
                };
                let _ = handle_tx.send(Ok(runtime.handle().clone()));
                // Returns when told to or when the `Shards` are gone; the runtime and every
                // task still on it are dropped here, on their own thread.
                let _ = runtime.block_on(stop_rx);
            })?;
            // A runtime is built in microseconds: this wait does not stall the caller.
            let handle =
                handle_rx.recv().map_err(|_| io::Error::other("a shard's thread ended as it started"))??;
            shards.handles.push(handle);
            shards.stops.push(stop_tx);
            shards.threads.push(thread);
        }
        Ok(shards)
    }

    /// Every shard's runtime, in order.
    pub fn handles(&self) -> &[Handle] {
        &self.handles
    }

    /// The runtime of shard `i` (taken modulo the count, so callers may count on).
    pub fn handle(&self, i: usize) -> &Handle {
        &self.handles[i % self.handles.len()]
    }
}

impl Drop for Shards {
    /// Stops every shard without waiting for its thread: this may run inside a task, where
    /// blocking on a join would stall the runtime.
    fn drop(&mut self) {
        for stop in self.stops.drain(..) {
            let _ = stop.send(());
        }
        self.threads.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn tasks_of_one_shard_share_its_thread_and_shards_differ() {
        let shards = Shards::start(2).unwrap();
        let (tx, rx) = mpsc::channel();
        for i in 0..4 {
            let tx = tx.clone();
            shards.handle(i).spawn(async move {
                // What a driver spawns (its streams' tasks) lands on the same shard.
                let inner = tokio::spawn(async { std::thread::current().id() }).await.unwrap();
                tx.send((i, std::thread::current().id(), inner)).unwrap();
            });
        }
        let mut seen: Vec<_> = (0..4).map(|_| rx.recv_timeout(Duration::from_secs(5)).unwrap()).collect();
        seen.sort_by_key(|s| s.0);
        for (_, outer, inner) in &seen {
            assert_eq!(outer, inner, "a spawned task runs on its spawner's shard");
        }
        assert_eq!(seen[0].1, seen[2].1, "0 and 2 are shard 0");
        assert_eq!(seen[1].1, seen[3].1, "1 and 3 are shard 1");
        assert_ne!(seen[0].1, seen[1].1, "two shards, two threads");
    }

    #[tokio::test]
    async fn shards_start_and_stop_inside_a_task() {
        // As a server does: no runtime is dropped in this async context.
        let shards = Shards::start(3).unwrap();
        assert_eq!(shards.handles().len(), 3);
        let on_shard = shards.handle(2).spawn(async { 7 }).await.unwrap();
        assert_eq!(on_shard, 7);
        drop(shards);
    }

    #[test]
    fn dropping_the_shards_drops_their_tasks() {
        struct Flag(mpsc::Sender<()>);
        impl Drop for Flag {
            fn drop(&mut self) {
                let _ = self.0.send(());
            }
        }
        let shards = Shards::start(1).unwrap();
        let (tx, rx) = mpsc::channel();
        let flag = Flag(tx);
        shards.handle(0).spawn(async move {
            let _flag = flag;
            std::future::pending::<()>().await;
        });
        drop(shards);
        rx.recv_timeout(Duration::from_secs(5)).expect("the pending task was dropped with its shard");
    }
}
