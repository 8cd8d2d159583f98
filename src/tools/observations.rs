//! The observation store: the element lists agents act on by `{index, observation_id}` (android_observe,
//! android_ui_dump, a scroll's find, the tree delta, an error's candidates), resolved again by `tools::target`.
//!
//! The observation (its elements, the channel and the device) is kept server-side for [`OBSERVATION_TTL`], at most
//! [`OBSERVATIONS_PER_CHANNEL`] per channel, so a later action can check that the element it targets is still the
//! one the agent saw.
//! Every observation id is minted here, by [`keep`] (or [`keep_scratch`]), so ids have one form and one source.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::element::Element;
use crate::device::DeviceKey;
use crate::protocol::errors::{ErrorCode, ProtoError};

/// How long an observation can be acted on. Agents think between steps (an LLM turn can take a minute); after
/// this the screen has likely changed anyway and the agent should observe again.
pub const OBSERVATION_TTL: Duration = Duration::from_secs(300);
/// Observations kept per channel (the newest win): an agent acts on its latest few, never on dozens.
pub const OBSERVATIONS_PER_CHANNEL: usize = 8;
/// Channels whose observations are kept at once (bounds memory whatever the number of channels).
const MAX_CHANNELS: usize = 4096;

/// One observe's element list, kept to check a later action against.
#[derive(Debug)]
pub struct Observation {
    pub id: String,
    pub device: DeviceKey,
    pub created: Instant,
    /// Every element of the dump, in document order (`index` = position).
    pub elements: Vec<Element>,
}

/// One channel's observations.
#[derive(Default)]
struct Kept {
    /// The agent's observations (observe, ui_dump, scroll's find), least recently used first: acting on one
    /// moves it to the back, so the ones in use are not the ones dropped.
    live: VecDeque<Arc<Observation>>,
    /// The dump an error's candidates were decided on (ambiguous, stale): one slot, replaced by the next error,
    /// so errors never push the agent's own observations out (issue 35).
    scratch: Option<Arc<Observation>>,
    /// Observations that left `live` (expired or dropped for a newer one), recognised until twice their TTL after
    /// they were made and at most [`GONE_PER_CHANNEL`], so a late action on one answers with the element where it
    /// is now instead of a bare "unknown".
    gone: VecDeque<(Arc<Observation>, Gone)>,
}

/// Why an observation left the live set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gone {
    Expired,
    Evicted,
}

/// Observations that left kept per channel for [`recall`]'s answer.
const GONE_PER_CHANNEL: usize = 8;

impl Kept {
    /// Moves expired live observations to `gone`, and drops what is past `gone`'s bounds.
    fn expire(&mut self, ttl: Duration) {
        while let Some(i) = self.live.iter().position(|o| o.created.elapsed() >= ttl) {
            if let Some(o) = self.live.remove(i) {
                self.gone.push_back((o, Gone::Expired));
            }
        }
        if self.scratch.as_ref().is_some_and(|o| o.created.elapsed() >= ttl) {
            self.scratch = None;
        }
        self.gone.retain(|(o, _)| o.created.elapsed() < ttl * 2);
        while self.gone.len() > GONE_PER_CHANNEL {
            self.gone.pop_front();
        }
    }

    fn is_empty(&self) -> bool {
        self.live.is_empty() && self.scratch.is_none() && self.gone.is_empty()
    }

    fn newest(&self) -> Option<Instant> {
        self.live.iter().chain(&self.scratch).map(|o| o.created).max()
    }

    fn holds(&self, id: &str) -> bool {
        self.live.iter().chain(&self.scratch).chain(self.gone.iter().map(|(o, _)| o)).any(|o| o.id == id)
    }
}

type Store = Mutex<HashMap<String, Kept>>;

/// Process-wide: channel ids are unique per process and an observation is only ever read by its own channel.
fn store() -> &'static Store {
    static STORE: OnceLock<Store> = OnceLock::new();
    STORE.get_or_init(Default::default)
}

/// Elements kept per observation (a real screen has tens to a few hundred; the dump is the phone's word).
pub const MAX_ELEMENTS_KEPT: usize = 4096;
/// Text bytes (text, ids, class, package, description) kept per observation.
pub const MAX_BYTES_KEPT: usize = 1 << 20;

/// How long an observation lives: [`OBSERVATION_TTL`], or — for tests only — `XAGENT_ADB_TEST_OBSERVATION_TTL_MS`
/// (read once), so a test can watch the sweep without waiting five minutes.
pub fn ttl() -> Duration {
    static TTL: OnceLock<Duration> = OnceLock::new();
    *TTL.get_or_init(|| {
        std::env::var("XAGENT_ADB_TEST_OBSERVATION_TTL_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(OBSERVATION_TTL, |ms| Duration::from_millis(ms.clamp(100, OBSERVATION_TTL.as_millis() as u64)))
    })
}

/// Frees every observation of `channel` (`auth.logout`, `channel.close`: its ids can never be used again).
pub fn forget_channel(channel: &str) {
    store().lock().unwrap_or_else(|e| e.into_inner()).remove(channel);
}

/// Frees every expired observation and every channel left with none. Run periodically (`run.rs`), so memory
/// goes back down even when no channel observes again — e.g. channels of an instance whose lease expired: no socket,
/// no new observation, all gone two TTLs after the last (the second: recognised as expired, see [`Kept::gone`]).
pub fn sweep() {
    let ttl = ttl();
    let mut map = store().lock().unwrap_or_else(|e| e.into_inner());
    map.retain(|_, k| {
        k.expire(ttl);
        !k.is_empty()
    });
}

/// Observations held right now (the `/metrics` gauge `xagent_observations_held`): live ones and error scratch
/// dumps (the ones recognised after they left are counted too: they hold their elements).
pub fn held() -> usize {
    let map = store().lock().unwrap_or_else(|e| e.into_inner());
    map.values().map(|k| k.live.len() + usize::from(k.scratch.is_some()) + k.gone.len()).sum()
}

/// At most [`MAX_ELEMENTS_KEPT`] elements and [`MAX_BYTES_KEPT`] bytes of their strings (document order: a later
/// target past the cut is `stale_element`, as for an element that left the screen).
fn bounded(mut obs: Observation) -> Arc<Observation> {
    let mut bytes = 0usize;
    let keep = obs
        .elements
        .iter()
        .take(MAX_ELEMENTS_KEPT)
        .take_while(|e| {
            bytes = bytes.saturating_add(
                e.text.len() + e.resource_id.len() + e.class.len() + e.package.len() + e.content_desc.len(),
            );
            bytes <= MAX_BYTES_KEPT
        })
        .count();
    obs.elements.truncate(keep);
    Arc::new(obs)
}

/// The channel's entry, making room among channels first (bounds memory whatever the number of channels).
fn entry<'a>(map: &'a mut HashMap<String, Kept>, channel: &str, ttl: Duration) -> &'a mut Kept {
    if !map.contains_key(channel) && map.len() >= MAX_CHANNELS {
        map.retain(|_, k| k.newest().is_some_and(|t| t.elapsed() < ttl));
        if map.len() >= MAX_CHANNELS {
            // Still full of live channels: forget the one whose newest observation is oldest.
            let oldest = map.iter().min_by_key(|(_, k)| k.newest()).map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                map.remove(&k);
            }
        }
    }
    let k = map.entry(channel.to_owned()).or_default();
    k.expire(ttl);
    k
}

/// Keeps `obs` for `channel` (bounded: see [`bounded`]): the least recently used beyond the per-channel cap leave.
fn remember(channel: &str, obs: Observation) -> Arc<Observation> {
    let obs = bounded(obs);
    let ttl = ttl();
    let mut map = store().lock().unwrap_or_else(|e| e.into_inner());
    let k = entry(&mut map, channel, ttl);
    while k.live.len() >= OBSERVATIONS_PER_CHANNEL {
        if let Some(o) = k.live.pop_front() {
            k.gone.push_back((o, Gone::Evicted));
        }
    }
    k.live.push_back(obs.clone());
    k.expire(ttl);
    obs
}

/// Keeps the dump an error was decided on in the channel's one scratch slot: its id can be acted on like any
/// observation's, but it never takes the place of one the agent made.
fn remember_scratch(channel: &str, obs: Observation) -> Arc<Observation> {
    let obs = bounded(obs);
    let ttl = ttl();
    let mut map = store().lock().unwrap_or_else(|e| e.into_inner());
    entry(&mut map, channel, ttl).scratch = Some(obs.clone());
    obs
}

/// A fresh observation id (`obs_` + random hex): unguessable, so one channel cannot name another's by accident.
fn new_id() -> String {
    format!("obs_{}", crate::protocol::ids::random_hex(8))
}

/// Keeps the element list an agent is given (`elements` of a tree read on `device`) for `channel` under a fresh id,
/// and returns the id: what `element: {index, observation_id}` names later.
pub fn keep(channel: &str, device: &DeviceKey, elements: Vec<Element>) -> String {
    let id = new_id();
    remember(channel, Observation { id: id.clone(), device: device.clone(), created: Instant::now(), elements });
    id
}

/// [`keep`] for the dump an error was decided on: into the channel's scratch slot ([`remember_scratch`]).
pub fn keep_scratch(channel: &str, device: &DeviceKey, elements: Vec<Element>) -> String {
    let id = new_id();
    remember_scratch(
        channel,
        Observation { id: id.clone(), device: device.clone(), created: Instant::now(), elements },
    );
    id
}

/// Why [`recall`] found no observation to act on.
#[derive(Debug)]
pub enum Missing {
    /// It left this channel's live set; its elements are still known, to look for on screen.
    Gone(Arc<Observation>, Gone, ProtoError),
    /// Unknown here, or from another channel or device: the error says which.
    Refused(ProtoError),
}

impl Missing {
    pub fn into_error(self) -> ProtoError {
        match self {
            Missing::Gone(_, _, e) | Missing::Refused(e) => e,
        }
    }
}

/// The observation `id` of `channel` on `device` (marked as just used), or why not, saying what to do.
pub fn recall(channel: &str, device: &DeviceKey, id: &str) -> Result<Arc<Observation>, Missing> {
    let ttl = ttl();
    let shown = id.chars().take(64).collect::<String>();
    let mut map = store().lock().unwrap_or_else(|e| e.into_inner());
    let expired = |what: &str| {
        ProtoError::new(
            ErrorCode::ObservationExpired,
            format!(
                "observation {shown:?} {what} (observations live {} s, the {} most recently used per channel are                  kept)",
                OBSERVATION_TTL.as_secs(),
                OBSERVATIONS_PER_CHANNEL
            ),
        )
    };
    if let Some(k) = map.get_mut(channel) {
        k.expire(ttl);
        let found = if let Some(i) = k.live.iter().position(|o| o.id == id) {
            // Used: to the back of the queue.
            let o = k.live.remove(i).expect("position is in range");
            k.live.push_back(o.clone());
            Some(o)
        } else {
            k.scratch.clone().filter(|o| o.id == id)
        };
        if let Some(o) = found {
            if &o.device != device {
                return Err(Missing::Refused(ProtoError::new(
                    ErrorCode::ObservationExpired,
                    format!("observation {shown:?} was taken on another device; call android_observe again"),
                )));
            }
            return Ok(o);
        }
        if let Some((o, why)) = k.gone.iter().rev().find(|(o, _)| o.id == id).cloned() {
            let what = match why {
                Gone::Expired => "has expired",
                Gone::Evicted => "was dropped for newer observations",
            };
            if &o.device == device {
                return Err(Missing::Gone(o, why, expired(what)));
            }
            return Err(Missing::Refused(expired(&format!("{what} and was taken on another device"))));
        }
    }
    if map.iter().any(|(c, k)| c != channel && k.holds(id)) {
        return Err(Missing::Refused(ProtoError::new(
            ErrorCode::ObservationExpired,
            format!(
                "observation {shown:?} belongs to another channel: observations are per channel; call                  android_observe on this one"
            ),
        )));
    }
    let mut e = expired("is unknown or expired");
    e.message.push_str("; call android_observe again");
    Err(Missing::Refused(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 22 item 6: one observation holds at most MAX_ELEMENTS_KEPT elements and MAX_BYTES_KEPT bytes.
    #[test]
    fn one_observation_is_bounded_in_elements_and_bytes() {
        let node = |text: &str| {
            format!(
                r#"<node index="0" text="{text}" resource-id="" class="android.widget.TextView" package="p" content-desc="" clickable="true" enabled="true" focused="false" checked="false" bounds="[0,0][10,10]" />"#
            )
        };
        let xml = |nodes: String| format!("<?xml version='1.0' ?><hierarchy rotation=\"0\">{nodes}</hierarchy>");
        let dev = DeviceKey { server: "s".into(), serial: "a".into() };
        let ch = format!("ch_{}", crate::protocol::ids::random_hex(4));
        let many =
            crate::tools::dump::parse_dump(&xml((0..MAX_ELEMENTS_KEPT + 500).map(|_| node("x")).collect())).unwrap();
        assert_eq!(many.len(), MAX_ELEMENTS_KEPT + 500);
        let kept = remember(
            &ch,
            Observation { id: "o1".into(), device: dev.clone(), created: Instant::now(), elements: many },
        );
        assert_eq!(kept.elements.len(), MAX_ELEMENTS_KEPT);
        let big = "y".repeat(700 * 1024);
        let fat = crate::tools::dump::parse_dump(&xml(format!("{}{}", node(&big), node(&big)))).unwrap();
        let kept = remember(&ch, Observation { id: "o2".into(), device: dev, created: Instant::now(), elements: fat });
        assert_eq!(kept.elements.len(), 1, "the second 700 KiB element passes the 1 MiB budget");
        assert!(held() >= 2);
        forget_channel(&ch);
    }

    #[test]
    fn observation_store_is_per_channel_bounded_and_device_checked() {
        let dev = DeviceKey { server: "s".into(), serial: "a".into() };
        let other = DeviceKey { server: "s".into(), serial: "b".into() };
        let ch = format!("ch_{}", crate::protocol::ids::random_hex(4));
        let mk = |i: usize| Observation {
            id: format!("obs_{ch}_{i}"),
            device: dev.clone(),
            created: Instant::now(),
            elements: vec![],
        };
        let err = |r: Result<Arc<Observation>, Missing>| r.unwrap_err().into_error();
        for i in 0..OBSERVATIONS_PER_CHANNEL + 2 {
            remember(&ch, mk(i));
        }
        // Dropped for newer ones: recognised, its elements kept to look for on screen.
        let e = recall(&ch, &dev, &format!("obs_{ch}_0")).unwrap_err();
        assert!(matches!(e, Missing::Gone(_, Gone::Evicted, _)), "{e:?}");
        assert_eq!(e.into_error().code, ErrorCode::ObservationExpired);
        assert!(recall(&ch, &dev, &format!("obs_{ch}_{}", OBSERVATIONS_PER_CHANNEL + 1)).is_ok());
        let e = err(recall(&ch, &other, &format!("obs_{ch}_{}", OBSERVATIONS_PER_CHANNEL + 1)));
        assert!(e.message.contains("another device"), "{e}");
        // Another channel's id says so (it is never acted on).
        let e = err(recall("some_other_channel", &dev, &format!("obs_{ch}_9")));
        assert!(e.message.contains("belongs to another channel"), "{e}");
        let e = err(recall(&ch, &dev, "obs_never"));
        assert!(e.message.contains("unknown or expired"), "{e}");
        forget_channel(&ch);
    }

    /// Issue 35 item 3: the observation in use stays, errors' dumps never push one out.
    #[test]
    fn recently_used_observations_stay_and_error_dumps_take_no_place() {
        let dev = DeviceKey { server: "s".into(), serial: "a".into() };
        let ch = format!("ch_{}", crate::protocol::ids::random_hex(4));
        let mk = |id: String| Observation { id, device: dev.clone(), created: Instant::now(), elements: vec![] };
        remember(&ch, mk("first".into()));
        for i in 0..OBSERVATIONS_PER_CHANNEL * 3 {
            // Acting on the first between newer observations keeps it.
            assert!(recall(&ch, &dev, "first").is_ok(), "after {i} more");
            remember(&ch, mk(format!("newer_{i}")));
            // Any number of errors' dumps: one slot, replaced.
            remember_scratch(&ch, mk(format!("scratch_{i}")));
        }
        assert!(recall(&ch, &dev, "first").is_ok());
        assert!(recall(&ch, &dev, &format!("scratch_{}", OBSERVATIONS_PER_CHANNEL * 3 - 1)).is_ok());
        assert!(recall(&ch, &dev, "scratch_0").is_err(), "the scratch slot holds the latest error's dump only");
        let map = store().lock().unwrap();
        assert_eq!(map[&ch].live.len(), OBSERVATIONS_PER_CHANNEL);
        assert!(map[&ch].gone.len() <= GONE_PER_CHANNEL);
        drop(map);
        forget_channel(&ch);
    }
}
