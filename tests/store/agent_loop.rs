//! The agent loop's store side (`netops_netdiag::agent`, docs/agent.md) over each adapter:
//! a claim is exclusive, a result posted again is one event, and the scheduled pass's expiry
//! ends the actions no agent took or finished in time, each with one event.

use chrono::{DateTime, Duration, Utc};
use netops_netdiag::agent::{self, ActionResult, Posted, SpeedResult};
use netops_netdiag::model::{ACTION_REQUESTS, ACTIONS, Action, ActionKind, ActionStatus, EVENTS};
use netops_shared::store::{Filter, Stores};
use serde_json::Value;

use crate::data::ACME;

conformance! {
    [sqlite, dynamodb] [
        of_two_claims_at_once_exactly_one_gets_the_action,
        a_result_posted_again_is_one_event_and_another_claim_posts_none,
        unclaimed_and_lapsed_actions_expire_once_with_an_event_each,
        an_expiry_event_lost_on_the_way_is_written_by_the_next_pass,
    ]
}

const HOST: &str = "PAR-LT-0001";

/// Queues a speed test `id` of [`HOST`], requested at `at`, to be claimed by `claim_by`.
async fn queue(s: &Stores, id: &str, at: DateTime<Utc>, claim_by: DateTime<Utc>) {
    let action = Action {
        action_id: id.to_owned(),
        action: ActionKind::Speed,
        status: ActionStatus::Queued,
        requested_at: at,
        claim_by: Some(claim_by),
        claimed_at: None,
        lease_until: None,
        claim_id: None,
        hostname: HOST.to_owned(),
        target: None,
        seconds: None,
        completed_at: None,
        event_id: None,
        result: None,
    };
    let body = serde_json::to_value(&action).expect("json");
    s.docs
        .put(ACME, ACTIONS, vec![(id.to_owned(), body)])
        .await
        .expect("put");
    s.series_writes
        .append(ACME, ACTION_REQUESTS, vec![agent::request_record(&action)])
        .await
        .expect("request");
}

/// The claim window of a claim at `now`: the default deadline, 5 minutes.
fn since(now: DateTime<Utc>) -> DateTime<Utc> {
    now - Duration::minutes(5)
}

async fn stored(s: &Stores, id: &str) -> Action {
    agent::action(s, ACME, id)
        .await
        .expect("get")
        .expect("the action")
        .0
}

/// The events of [`HOST`] about action `id`.
async fn events_of(s: &Stores, id: &str) -> Vec<Value> {
    s.series
        .read_all(ACME, EVENTS, Some(HOST), 0, i64::MAX / 2, &Filter::all())
        .await
        .expect("events")
        .items
        .into_iter()
        .map(|r| r.body)
        .filter(|b| b["details"]["action_id"] == id)
        .collect()
}

async fn of_two_claims_at_once_exactly_one_gets_the_action(s: Stores) {
    let now = Utc::now();
    queue(&s, "act-1", now, now + Duration::minutes(5)).await;
    let lease = Duration::minutes(3);
    let (a, b) = tokio::join!(
        agent::claim(&s, ACME, HOST, since(now), 5, now, lease),
        agent::claim(&s, ACME, HOST, since(now), 5, now, lease),
    );
    let (a, b) = (a.expect("claim a"), b.expect("claim b"));
    assert_eq!(a.len() + b.len(), 1, "one claimant gets it: {a:?} {b:?}");
    let won = a.into_iter().chain(b).next().expect("the claim");
    assert_eq!(won.status, ActionStatus::Running);
    assert_eq!(won.lease_until, Some(now + lease));
    let kept = stored(&s, "act-1").await;
    assert_eq!(
        kept.claim_id, won.claim_id,
        "the winner's claim is the one kept"
    );
    assert!(
        agent::claim(&s, ACME, HOST, since(now), 5, now, lease)
            .await
            .expect("claim")
            .is_empty(),
        "a running action is claimed once"
    );
}

async fn a_result_posted_again_is_one_event_and_another_claim_posts_none(s: Stores) {
    let now = Utc::now();
    queue(&s, "act-2", now, now + Duration::minutes(5)).await;
    let claimed = agent::claim(&s, ACME, HOST, since(now), 1, now, Duration::minutes(3))
        .await
        .expect("claim");
    let claim_id = claimed[0].claim_id.clone().expect("claim id");
    let result = ActionResult {
        claim_id: claim_id.clone(),
        trace: None,
        speed: Some(SpeedResult {
            down_mbps: 512.5,
            up_mbps: 98.0,
            server: "speedtest.netops.example".into(),
        }),
        capture: None,
    };
    let event = agent::result_event(&claimed[0], &result).expect("a valid result");
    let wrong = agent::complete(&s, ACME, HOST, "act-2", event.clone(), "clm-other", now)
        .await
        .expect("post");
    assert!(matches!(wrong, Posted::NotClaimed(_)), "{wrong:?}");
    let elsewhere = agent::complete(
        &s,
        ACME,
        "PAR-LT-0002",
        "act-2",
        event.clone(),
        &claim_id,
        now,
    )
    .await
    .expect("post");
    assert!(matches!(elsewhere, Posted::Unknown), "{elsewhere:?}");
    for (i, later) in [0, 5].into_iter().enumerate() {
        let posted = agent::complete(
            &s,
            ACME,
            HOST,
            "act-2",
            event.clone(),
            &claim_id,
            now + Duration::seconds(later),
        )
        .await
        .expect("post");
        let Posted::Completed { action, replayed } = posted else {
            panic!("completed: {posted:?}");
        };
        assert_eq!(replayed, i > 0);
        assert_eq!(
            action.completed_at,
            Some(now),
            "the first completion's time"
        );
    }
    let events = events_of(&s, "act-2").await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["source"], "speed");
    assert_eq!(events[0]["details"]["down_mbps"], 512.5);
    assert_eq!(stored(&s, "act-2").await.status, ActionStatus::Completed);
}

async fn unclaimed_and_lapsed_actions_expire_once_with_an_event_each(s: Stores) {
    let now = Utc::now();
    let earlier = now - Duration::minutes(10);
    // Claimed (the oldest) with a lease that ran out; unclaimed past its deadline; still in
    // time.
    queue(
        &s,
        "act-4",
        earlier - Duration::minutes(1),
        now + Duration::minutes(5),
    )
    .await;
    queue(&s, "act-3", earlier, now - Duration::seconds(1)).await;
    agent::claim(
        &s,
        ACME,
        HOST,
        since(earlier),
        1,
        earlier,
        Duration::minutes(1),
    )
    .await
    .expect("claim");
    queue(&s, "act-5", now, now + Duration::minutes(5)).await;
    assert_eq!(agent::expire(&s, ACME, now).await.expect("expire"), 2);
    assert_eq!(
        agent::expire(&s, ACME, now + Duration::seconds(1))
            .await
            .expect("expire"),
        0,
        "expired once"
    );
    for (id, outcome) in [("act-3", "unclaimed"), ("act-4", "lease_expired")] {
        assert_eq!(stored(&s, id).await.status, ActionStatus::Expired, "{id}");
        let events = events_of(&s, id).await;
        assert_eq!(events.len(), 1, "{id}: {events:?}");
        assert_eq!(events[0]["details"]["outcome"], outcome);
        assert_eq!(events[0]["source"], "speed");
    }
    assert_eq!(stored(&s, "act-5").await.status, ActionStatus::Queued);
    assert!(events_of(&s, "act-5").await.is_empty());
}

/// A pass that stopped after marking an action expired but before writing its event: the
/// next pass writes it, once, for an action expired within the last few minutes; an action
/// expired long ago is left as it is (no pass writes every old event again).
async fn an_expiry_event_lost_on_the_way_is_written_by_the_next_pass(s: Stores) {
    let now = Utc::now();
    for (id, ended) in [
        ("act-6", now - Duration::minutes(1)),
        ("act-7", now - Duration::minutes(30)),
    ] {
        queue(&s, id, ended - Duration::minutes(5), ended).await;
        // What the stopped pass left: the action marked, no event.
        let mut action = stored(&s, id).await;
        action.status = ActionStatus::Expired;
        action.completed_at = Some(ended);
        action.event_id = Some(format!("ev-{id}"));
        action.result = Some(serde_json::json!({
            "message": "Action speed expirée",
            "details": {"action_id": id, "outcome": "unclaimed"},
        }));
        let body = serde_json::to_value(&action).expect("json");
        s.docs
            .put(ACME, ACTIONS, vec![(id.to_owned(), body)])
            .await
            .expect("put");
    }
    assert!(events_of(&s, "act-6").await.is_empty());
    for pass in 0..2 {
        let at = now + Duration::seconds(pass);
        assert_eq!(
            agent::expire(&s, ACME, at).await.expect("expire"),
            0,
            "nothing newly expired"
        );
        let events = events_of(&s, "act-6").await;
        assert_eq!(events.len(), 1, "pass {pass}: {events:?}");
        assert_eq!(events[0]["details"]["outcome"], "unclaimed");
        assert_eq!(events[0]["severity"], "medium");
        assert_eq!(events[0]["source"], "speed");
        assert_eq!(
            events[0]["at"],
            serde_json::to_value(now - Duration::minutes(1)).expect("json")
        );
    }
    assert!(events_of(&s, "act-7").await.is_empty());
}
