//! Supersession: a new keyed memory replaces the active memory holding the
//! same topic key. The old one is kept, marked superseded, and points
//! forward to its successor; the new one points back.
//!
//! Within one call, speakers are weighed: a person's statement about a
//! topic outranks an agent's restatement of it. When an assistant repeats
//! or acknowledges what the user just said ("Got it -- pnpm"), a reasoner
//! may give both the same key; the assistant's version is then folded
//! into the user's memory (as extra provenance) instead of superseding
//! it.
//!
//! Across calls, a person's newer statement replaces the holder of its
//! key, whichever session holds it: a person's statements are about
//! themselves ("I moved to Denver" then "I moved to Austin"). An agent's
//! replaces a holder said in the same session, or one in another session
//! that it says again word for word, dates aside (a script's advice
//! repeated on another day). An agent speaks about the matter of its
//! conversation (this order's refund reference, the credit applied for
//! this outage), and a key does not say whether two conversations'
//! matters are one: "the refund reference is RF-1" in one support call
//! and "... RF-2" in another are two refunds, and two credits for two
//! outages add up. Replacing by key across sessions hid the earlier one
//! from recall; both are kept active instead, each with its date.
//! (Measured in docs/bench/generalization/supersession.txt.)

use crate::core::model::{Memory, Metadata};

/// One replacement: `old` is superseded by `new`.
#[derive(Clone, Debug, PartialEq)]
pub struct Replacement {
    pub old: String,
    pub new: String,
}

/// A new memory that only restates another new memory of the same call
/// held by a weightier speaker: it is not stored; its sources join `kept`.
#[derive(Clone, Debug, PartialEq)]
pub struct Restatement {
    pub id: String,
    pub kept: String,
}

/// What [`plan`] decided.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Plan {
    pub replacements: Vec<Replacement>,
    pub restatements: Vec<Restatement>,
}

/// Weight of an agent's word (assistant, system, tool) on a topic.
pub const AGENT: u8 = 1;
/// Weight of a person's word (the user, or a named participant).
pub const PERSON: u8 = 2;

pub use crate::core::text::is_agent_role;

/// The weight of a speaker's statements.
pub fn authority(role: &str) -> u8 {
    if is_agent_role(role) {
        AGENT
    } else {
        PERSON
    }
}

/// The weight of a memory's word: its heaviest source's speaker
/// ([`authority`]), a person's when it has no source (`remember`).
pub fn authority_of<'r>(roles: impl IntoIterator<Item = &'r str>) -> u8 {
    roles.into_iter().map(authority).max().unwrap_or(PERSON)
}

/// Which stored holders of its key a new memory may replace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Any session's (a person's statement).
    AnySession,
    /// One said in the new memory's own session, or one it says again
    /// word for word, dates aside (an agent's).
    OwnSession,
}

/// Where and what a memory said: the parts of it [`Reach`] weighs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Said<'a> {
    pub session: &'a str,
    pub content: &'a str,
}

impl Reach {
    /// How far a statement by a speaker of weight `authority` reaches.
    pub fn of(authority: u8) -> Reach {
        if authority < PERSON {
            Reach::OwnSession
        } else {
            Reach::AnySession
        }
    }

    /// Whether the holder `held` is within reach of the new memory `new`.
    pub fn reaches(self, new: Said<'_>, held: Said<'_>) -> bool {
        self.from(new).reaches(held)
    }

    /// This reach from `new`, to weigh many holders against it: its words
    /// without their dates are read once, and only if a holder from
    /// another session needs them.
    pub fn from(self, new: Said<'_>) -> Reaching<'_> {
        Reaching { reach: self, new, undated: std::cell::OnceCell::new() }
    }
}

/// A [`Reach`] from one new memory ([`Reach::from`]).
#[derive(Debug)]
pub struct Reaching<'a> {
    reach: Reach,
    new: Said<'a>,
    undated: std::cell::OnceCell<String>,
}

impl Reaching<'_> {
    /// Whether the holder `held` is within reach.
    pub fn reaches(&self, held: Said<'_>) -> bool {
        self.reach == Reach::AnySession
            || self.new.session == held.session
            || *self.undated.get_or_init(|| crate::core::dates::undated(self.new.content)) == crate::core::dates::undated(held.content)
    }
}

/// Plans replacements for `new` memories (in conversation order) given
/// the active memories of the same owner ([`crate::core::model::Owner`])
/// that already hold their keys, as far as each may [`Reach`].
/// `authority[i]` is the weight of memory `i`'s speaker (missing entries
/// count as [`PERSON`]).
///
/// Among several new memories with one key, the last wins and supersedes
/// the earlier ones, unless it comes from a lighter speaker than the
/// current holder: then it is a restatement. Sets `supersedes` on the new
/// memories that replace something.
pub fn plan(new: &mut [Memory], authority: &[u8], existing_by_key: &dyn Fn(&str, &Metadata, Said<'_>, Reach) -> Vec<String>) -> Plan {
    plan_with_repeats(new, authority, &[], existing_by_key)
}

/// A statement of the call that is a stored, active memory said again
/// word for word (not stored again): where it was said, among the new
/// memories, and what it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Repeat {
    /// How many of the new memories were said before it.
    pub at: usize,
    /// The stored memory it repeats.
    pub id: String,
    pub key: String,
    pub owner: crate::core::model::Owner,
    /// Its speaker's weight ([`AGENT`], [`PERSON`]).
    pub weight: u8,
}

/// [`plan`], with the call's `repeats` of stored memories taking their
/// place in it: a new memory of the call that replaced a stored one which
/// the call then says again is itself replaced by it (the last word
/// holds), and the stored one stays.
pub fn plan_with_repeats(
    new: &mut [Memory],
    authority: &[u8],
    repeats: &[Repeat],
    existing_by_key: &dyn Fn(&str, &Metadata, Said<'_>, Reach) -> Vec<String>,
) -> Plan {
    let mut out = Plan::default();
    // The key's holder so far in this call, per owner: a retry of a
    // session may judge calls of several owners at once.
    let mut holder: std::collections::HashMap<(String, crate::core::model::Owner), (String, u8)> = std::collections::HashMap::new();
    for i in 0..=new.len() {
        for r in repeats.iter().filter(|r| r.at == i) {
            said_again(new, &mut out, &mut holder, r);
        }
        let Some(m) = new.get_mut(i) else { break };
        let Some(key) = m.key.clone() else { continue };
        let key = (key, crate::core::model::Owner::of(&m.metadata));
        let weight = authority.get(i).copied().unwrap_or(PERSON);
        let previous: Vec<String> = match holder.get(&key) {
            Some((id, held)) if weight < *held => {
                out.restatements.push(Restatement { id: m.id.clone(), kept: id.clone() });
                continue;
            }
            // A weightier speaker after the call's holder reaches further
            // than it did (a person after an agent): the stored holders
            // only it reaches are replaced too, not left active beside it.
            Some((id, held)) if Reach::of(weight) == Reach::AnySession && Reach::of(*held) != Reach::AnySession => {
                let beyond = existing_by_key(&key.0, &m.metadata, Said { session: &m.session_id, content: &m.content }, Reach::of(weight));
                let fresh = beyond.into_iter().filter(|old| old != id && !out.replacements.iter().any(|r| r.old == *old));
                std::iter::once(id.clone()).chain(fresh).collect()
            }
            Some((id, _)) => vec![id.clone()],
            None => existing_by_key(&key.0, &m.metadata, Said { session: &m.session_id, content: &m.content }, Reach::of(weight)),
        };
        for old in &previous {
            out.replacements.push(Replacement { old: old.clone(), new: m.id.clone() });
        }
        if let Some(first) = previous.first() {
            m.supersedes = Some(first.clone());
        }
        holder.insert(key, (m.id.clone(), weight));
    }
    out
}

/// A stored memory said again in the call: when a new memory of the call
/// replaced it, that replacement is undone and the call's holder of the
/// key (that memory, or a later one of the call that replaced it) is
/// replaced by the stored memory, which holds the key again.
fn said_again(new: &mut [Memory], out: &mut Plan, holder: &mut std::collections::HashMap<(String, crate::core::model::Owner), (String, u8)>, r: &Repeat) {
    let slot = (r.key.clone(), r.owner.clone());
    let Some((current, _)) = holder.get(&slot).cloned() else { return };
    if current == r.id || !out.replacements.iter().any(|x| x.old == r.id) {
        return;
    }
    out.replacements.retain(|x| x.old != r.id);
    for m in new.iter_mut().filter(|m| m.supersedes.as_deref() == Some(r.id.as_str())) {
        m.supersedes = None;
    }
    out.replacements.push(Replacement { old: current, new: r.id.clone() });
    holder.insert(slot, (r.id.clone(), r.weight));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mem(id: &str, key: &str) -> Memory {
        Memory { key: Some(key.into()), summary: String::new(), ..Memory::sample(id, id) }
    }

    #[test]
    fn test_later_statement_of_equal_weight_supersedes_the_earlier() {
        let mut new = vec![mem("a", "user.pm"), mem("b", "user.pm")];
        let p = plan(&mut new, &[PERSON, PERSON], &|_, _, _, _| vec!["old".into()]);
        assert_eq!(p.replacements, vec![Replacement { old: "old".into(), new: "a".into() }, Replacement { old: "a".into(), new: "b".into() }]);
        assert_eq!(new[1].supersedes.as_deref(), Some("a"));
        assert!(p.restatements.is_empty());
    }

    #[test]
    fn test_agent_restating_a_user_key_in_the_same_call_does_not_win() {
        let mut new = vec![mem("user", "user.pm"), mem("echo", "user.pm")];
        let p = plan(&mut new, &[PERSON, AGENT], &|_, _, _, _| vec![]);
        assert!(p.replacements.is_empty());
        assert_eq!(p.restatements, vec![Restatement { id: "echo".into(), kept: "user".into() }]);
        assert_eq!(new[1].supersedes, None);
    }

    #[test]
    fn test_user_correcting_an_agent_in_the_same_call_wins() {
        let mut new = vec![mem("agent", "project.pm"), mem("user", "project.pm")];
        let p = plan(&mut new, &[AGENT, PERSON], &|_, _, _, _| vec![]);
        assert_eq!(p.replacements, vec![Replacement { old: "agent".into(), new: "user".into() }]);
    }

    /// Holders of every key, each (id, session, content), looked up
    /// within reach.
    fn holders<'h>(held: &'h [(&'h str, &'h str, &'h str)]) -> impl Fn(&str, &Metadata, Said<'_>, Reach) -> Vec<String> + 'h {
        move |_, _, new, reach| {
            held.iter().filter(|(_, session, content)| reach.reaches(new, Said { session, content })).map(|(id, _, _)| id.to_string()).collect()
        }
    }

    #[test]
    fn test_an_agents_statement_does_not_supersede_another_sessions_holder() {
        let mut new = vec![Memory { session_id: "call-2".into(), ..mem("ref-2", "project.refund_reference") }];
        let p = plan(&mut new, &[AGENT], &holders(&[("ref-1", "call-1", "Assistant: The refund reference is RF-1.")]));
        assert!(p.replacements.is_empty());
        assert_eq!(new[0].supersedes, None);
    }

    #[test]
    fn test_an_agents_statement_supersedes_its_own_sessions_holder() {
        let mut new = vec![Memory { session_id: "call-1".into(), ..mem("ref-2", "project.refund_reference") }];
        let p = plan(
            &mut new,
            &[AGENT],
            &holders(&[("ref-1", "call-1", "Assistant: The refund reference is RF-1."), ("other", "call-0", "Assistant: The refund reference is RF-0.")]),
        );
        assert_eq!(p.replacements, vec![Replacement { old: "ref-1".into(), new: "ref-2".into() }]);
    }

    #[test]
    fn test_an_agents_advice_said_again_on_another_day_supersedes_its_earlier_copy() {
        let said = |day| crate::core::dates::resolve("Assistant: Keep notes, details are hard to recall a few weeks later.", day);
        let day = |s| chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
        let (first, again) = (said(day("2023-06-20")), said(day("2023-09-02")));
        let mut new = vec![Memory { session_id: "chat-9".into(), content: again, ..mem("notes-2", "project.notes") }];
        let p = plan(&mut new, &[AGENT], &holders(&[("notes-1", "chat-2", &first)]));
        assert_eq!(p.replacements, vec![Replacement { old: "notes-1".into(), new: "notes-2".into() }]);
    }

    #[test]
    fn test_a_persons_statement_supersedes_a_holder_from_any_session() {
        let mut new = vec![Memory { session_id: "week-2".into(), ..mem("austin", "user.city") }];
        let p = plan(&mut new, &[PERSON], &holders(&[("denver", "week-1", "User: I moved to Denver.")]));
        assert_eq!(p.replacements, vec![Replacement { old: "denver".into(), new: "austin".into() }]);
        assert_eq!(new[0].supersedes.as_deref(), Some("denver"));
    }

    #[test]
    fn test_roles_are_weighed() {
        assert!(is_agent_role("Assistant"));
        assert_eq!(authority("user"), PERSON);
        assert_eq!(authority("Caroline"), PERSON);
    }
}
