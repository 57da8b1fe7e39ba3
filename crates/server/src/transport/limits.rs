//! What one client may spend, as Cassandra 5.0 counts it: bytes of requests
//! being processed (`ByteBudget`: per node, per client IP, per connection),
//! connections per client IP (`Clients`), and when a connection last moved a
//! byte (`Activity`, for `native_transport_idle_timeout`).
//!
//! The decisions (`admit`, `should_pause`) are plain functions over the
//! budgets, tested without sockets; the connection applies them.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// A number of bytes that may be in use at once. Taking is lock-free;
/// releasing wakes the connections waiting for room (`released`).
#[derive(Debug)]
pub struct ByteBudget {
    limit_bytes: u64,
    used_bytes: AtomicU64,
    released: Notify,
}

impl ByteBudget {
    pub fn new(limit_bytes: u64) -> ByteBudget {
        ByteBudget {
            limit_bytes,
            used_bytes: AtomicU64::new(0),
            released: Notify::new(),
        }
    }

    pub fn limit_bytes(&self) -> u64 {
        self.limit_bytes
    }

    pub fn used_bytes(&self) -> u64 {
        self.used_bytes.load(Ordering::Acquire)
    }

    /// More is in use than the limit allows (only after `take_anyway`).
    pub fn is_over(&self) -> bool {
        self.used_bytes() > self.limit_bytes
    }

    /// Takes `bytes` if the total stays within the limit.
    fn try_take(&self, bytes: u64) -> bool {
        self.used_bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&n| n <= self.limit_bytes)
            })
            .is_ok()
    }

    /// Takes `bytes` even past the limit (backpressure: the request runs,
    /// the connection then waits for room).
    fn take_anyway(&self, bytes: u64) {
        let _ = self
            .used_bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                Some(used.saturating_add(bytes))
            });
    }

    fn release(&self, bytes: u64) {
        let _ = self
            .used_bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                Some(used.saturating_sub(bytes))
            });
        self.released.notify_waiters();
    }
}

/// The budgets one connection's requests count against.
#[derive(Debug, Clone)]
pub struct RequestBudgets {
    /// This connection's own bytes in flight (unbounded: a counter).
    pub connection: Arc<ByteBudget>,
    /// The client IP's (`native_transport_max_request_data_in_flight_per_ip`).
    pub endpoint: Arc<ByteBudget>,
    /// The node's (`native_transport_max_request_data_in_flight`).
    pub global: Arc<ByteBudget>,
}

/// One request's bytes, held while it is processed and given back on drop.
#[derive(Debug)]
pub struct RequestBytes {
    bytes: u64,
    budgets: RequestBudgets,
}

impl Drop for RequestBytes {
    fn drop(&mut self) {
        self.budgets.connection.release(self.bytes);
        self.budgets.endpoint.release(self.bytes);
        self.budgets.global.release(self.bytes);
    }
}

/// What becomes of a request of some size.
#[derive(Debug)]
pub enum Admission {
    /// Within the limits.
    Admitted(RequestBytes),
    /// Over a limit, run anyway; the connection stops reading until
    /// `should_pause` says otherwise.
    AdmittedThenPause(RequestBytes),
    /// Over a limit and the client asked for errors (STARTUP option
    /// `THROW_ON_OVERLOAD`): answer OverloadedException, nothing taken.
    Refused,
}

/// Cassandra's rule: a request whose bytes fit in both the endpoint's and
/// the node's budget runs; one that does not either gets an error (when the
/// client asked to be told) or runs and pauses the connection.
pub fn admit(bytes: u64, budgets: &RequestBudgets, throw_on_overload: bool) -> Admission {
    let fits = budgets.endpoint.try_take(bytes);
    let fits = fits && {
        let global = budgets.global.try_take(bytes);
        if !global {
            budgets.endpoint.release(bytes);
        }
        global
    };
    if !fits && throw_on_overload {
        return Admission::Refused;
    }
    if !fits {
        budgets.endpoint.take_anyway(bytes);
        budgets.global.take_anyway(bytes);
    }
    budgets.connection.take_anyway(bytes);
    let held = RequestBytes {
        bytes,
        budgets: budgets.clone(),
    };
    if fits {
        Admission::Admitted(held)
    } else {
        Admission::AdmittedThenPause(held)
    }
}

/// A paused connection stays paused while its endpoint or the node is over
/// its limit, unless none of its own requests is in flight (then nothing it
/// waits for would ever be released by it, and one request at a time is let
/// through, as in Cassandra).
pub fn should_pause(budgets: &RequestBudgets) -> bool {
    budgets.connection.used_bytes() > 0 && (budgets.endpoint.is_over() || budgets.global.is_over())
}

/// Waits until `should_pause` turns false.
pub async fn wait_for_room(budgets: &RequestBudgets) {
    loop {
        let endpoint = budgets.endpoint.released.notified();
        let global = budgets.global.released.notified();
        tokio::pin!(endpoint, global);
        // Registered before the check, so a release in between is not missed.
        endpoint.as_mut().enable();
        global.as_mut().enable();
        if !should_pause(budgets) {
            return;
        }
        tokio::select! {
            () = endpoint => {}
            () = global => {}
        }
    }
}

/// The message of the OverloadedException, as Cassandra words it.
pub fn overloaded_message(budgets: &RequestBudgets) -> String {
    format!(
        "Request breached limit on bytes in flight. (Endpoint: {}/{} bytes, Global: {}/{} bytes.) \
         Server is currently in an overloaded state and cannot accept more requests.",
        budgets.endpoint.used_bytes(),
        budgets.endpoint.limit_bytes(),
        budgets.global.used_bytes(),
        budgets.global.limit_bytes(),
    )
}

/// Connections and request bytes per client IP address. An address's entry
/// lives while it has connections.
#[derive(Debug)]
pub struct Clients {
    max_connections_per_ip: Option<usize>,
    max_request_bytes_per_ip: u64,
    by_ip: Mutex<HashMap<IpAddr, ClientEntry>>,
}

#[derive(Debug)]
struct ClientEntry {
    connections: usize,
    bytes: Arc<ByteBudget>,
}

/// One connection counted against its IP; uncounted on drop.
#[derive(Debug)]
pub struct ClientSlot {
    clients: Arc<Clients>,
    ip: IpAddr,
    bytes: Arc<ByteBudget>,
}

impl ClientSlot {
    /// The IP's budget of request bytes, shared by its connections.
    pub fn endpoint_budget(&self) -> Arc<ByteBudget> {
        self.bytes.clone()
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut by_ip = self.clients.lock();
        if let Some(entry) = by_ip.get_mut(&self.ip) {
            entry.connections = entry.connections.saturating_sub(1);
            if entry.connections == 0 {
                by_ip.remove(&self.ip);
            }
        }
    }
}

impl Clients {
    pub fn new(max_connections_per_ip: Option<usize>, max_request_bytes_per_ip: u64) -> Clients {
        Clients {
            max_connections_per_ip,
            max_request_bytes_per_ip,
            by_ip: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<IpAddr, ClientEntry>> {
        // The map stays consistent whatever panicked while holding it.
        self.by_ip.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts a new connection from `ip`; `Err` with the limit when that
    /// IP already has `max_connections_per_ip` open.
    pub fn open(self: &Arc<Self>, ip: IpAddr) -> Result<ClientSlot, usize> {
        let mut by_ip = self.lock();
        let entry = by_ip.entry(ip).or_insert_with(|| ClientEntry {
            connections: 0,
            bytes: Arc::new(ByteBudget::new(self.max_request_bytes_per_ip)),
        });
        if let Some(limit) = self.max_connections_per_ip {
            if entry.connections >= limit {
                return Err(limit);
            }
        }
        entry.connections += 1;
        let bytes = entry.bytes.clone();
        drop(by_ip);
        Ok(ClientSlot {
            clients: self.clone(),
            ip,
            bytes,
        })
    }

    /// Connections open from `ip`.
    pub fn connections(&self, ip: IpAddr) -> usize {
        self.lock().get(&ip).map_or(0, |entry| entry.connections)
    }
}

/// When a connection last read or wrote a byte. Cassandra closes a
/// connection idle in both directions (Netty's all-idle state).
#[derive(Debug)]
pub struct Activity {
    start: Instant,
    last_micros: AtomicU64,
}

impl Activity {
    pub fn new(now: Instant) -> Activity {
        Activity {
            start: now,
            last_micros: AtomicU64::new(0),
        }
    }

    pub fn touch(&self, now: Instant) {
        let micros = now.saturating_duration_since(self.start).as_micros();
        let micros = u64::try_from(micros).unwrap_or(u64::MAX);
        self.last_micros.fetch_max(micros, Ordering::AcqRel);
    }

    /// How long nothing moved, as of `now`.
    pub fn idle_for(&self, now: Instant) -> Duration {
        let last = self.start + Duration::from_micros(self.last_micros.load(Ordering::Acquire));
        now.saturating_duration_since(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budgets(endpoint: u64, global: u64) -> RequestBudgets {
        RequestBudgets {
            connection: Arc::new(ByteBudget::new(u64::MAX)),
            endpoint: Arc::new(ByteBudget::new(endpoint)),
            global: Arc::new(ByteBudget::new(global)),
        }
    }

    fn used(budgets: &RequestBudgets) -> (u64, u64, u64) {
        (
            budgets.connection.used_bytes(),
            budgets.endpoint.used_bytes(),
            budgets.global.used_bytes(),
        )
    }

    #[test]
    fn requests_within_both_limits_are_admitted_and_released() {
        let b = budgets(100, 1000);
        let first = admit(60, &b, false);
        assert!(matches!(first, Admission::Admitted(_)));
        let second = admit(40, &b, true);
        assert!(
            matches!(second, Admission::Admitted(_)),
            "exactly full fits"
        );
        assert_eq!(used(&b), (100, 100, 100));
        drop(first);
        drop(second);
        assert_eq!(used(&b), (0, 0, 0));
    }

    #[test]
    fn throw_on_overload_refuses_without_taking_anything() {
        let b = budgets(100, 1000);
        let held = admit(80, &b, true);
        assert!(matches!(admit(21, &b, true), Admission::Refused));
        assert_eq!(used(&b), (80, 80, 80), "the endpoint's try is given back");
        // The global limit refuses too, and gives back the endpoint's bytes.
        let small_global = budgets(1000, 50);
        assert!(matches!(admit(51, &small_global, true), Admission::Refused));
        assert_eq!(used(&small_global), (0, 0, 0));
        drop(held);
    }

    #[test]
    fn backpressure_admits_then_pauses_until_released() {
        let b = budgets(100, 1000);
        let first = admit(80, &b, false);
        let second = admit(50, &b, false);
        assert!(matches!(second, Admission::AdmittedThenPause(_)));
        assert_eq!(used(&b), (130, 130, 130));
        assert!(should_pause(&b));
        drop(first);
        assert!(!should_pause(&b), "back under the limit");
        drop(second);
        assert_eq!(used(&b), (0, 0, 0));
    }

    #[test]
    fn a_connection_with_nothing_in_flight_is_not_paused() {
        let endpoint = Arc::new(ByteBudget::new(100));
        let global = Arc::new(ByteBudget::new(1000));
        let mine = RequestBudgets {
            connection: Arc::new(ByteBudget::new(u64::MAX)),
            endpoint: endpoint.clone(),
            global: global.clone(),
        };
        let other = RequestBudgets {
            connection: Arc::new(ByteBudget::new(u64::MAX)),
            endpoint,
            global,
        };
        // A request larger than the whole limit still runs, alone.
        let big = admit(500, &other, false);
        assert!(matches!(big, Admission::AdmittedThenPause(_)));
        assert!(should_pause(&other));
        assert!(
            !should_pause(&mine),
            "mine has nothing in flight to wait for"
        );
        drop(big);
        assert!(!should_pause(&other));
    }

    #[tokio::test]
    async fn waiting_for_room_ends_when_bytes_are_released() {
        let b = budgets(10, 1000);
        let first = admit(8, &b, false);
        let second = admit(8, &b, false);
        assert!(should_pause(&b));
        let waiter = tokio::spawn({
            let b = b.clone();
            async move { wait_for_room(&b).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(first);
        tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .expect("released in time")
            .expect("waiter ends");
        drop(second);
    }

    #[test]
    fn connections_per_ip_are_limited_and_counted_down() {
        let clients = Arc::new(Clients::new(Some(2), 100));
        let a: IpAddr = "127.0.0.1".parse().expect("ip");
        let b: IpAddr = "127.0.0.2".parse().expect("ip");
        let first = clients.open(a).expect("first");
        let second = clients.open(a).expect("second");
        assert_eq!(clients.open(a).err(), Some(2));
        let other = clients.open(b).expect("another address has its own count");
        assert!(
            Arc::ptr_eq(&first.endpoint_budget(), &second.endpoint_budget()),
            "one byte budget per address"
        );
        assert!(!Arc::ptr_eq(
            &first.endpoint_budget(),
            &other.endpoint_budget()
        ));
        drop(first);
        assert_eq!(clients.connections(a), 1);
        let _third = clients.open(a).expect("a slot was freed");
        drop(second);
        drop(other);
        assert_eq!(clients.connections(b), 0);
        let unlimited = Arc::new(Clients::new(None, 100));
        let many: Vec<_> = (0..10).map(|_| unlimited.open(a)).collect();
        assert!(many.iter().all(Result::is_ok));
    }

    #[test]
    fn activity_measures_idle_time_from_the_last_touch() {
        let start = Instant::now();
        let activity = Activity::new(start);
        let later = start + Duration::from_millis(300);
        assert_eq!(activity.idle_for(later), Duration::from_millis(300));
        activity.touch(start + Duration::from_millis(200));
        assert_eq!(activity.idle_for(later), Duration::from_millis(100));
        // An older touch (another task's) does not move it back.
        activity.touch(start + Duration::from_millis(100));
        assert_eq!(activity.idle_for(later), Duration::from_millis(100));
    }
}
