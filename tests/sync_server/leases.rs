//! Leases on workflows through the sync server: taken, renewed, released and taken over with a
//! higher epoch; pushes under an older epoch, another holder or no lease fenced with nothing
//! written; and a former holder that keeps pushing while another device takes over, which
//! never advances the run after the new holder read its head.

use super::*;

fn lease_uri(workflow: &str) -> String {
    format!("/v1/namespaces/team/workflows/{workflow}/lease")
}

async fn take(app: &Router, workflow: &str, body: Value) -> (StatusCode, Value) {
    post(app, &lease_uri(workflow), Some(TOKEN), body).await
}

async fn release(app: &Router, workflow: &str, holder: &str, epoch: u64) -> (StatusCode, Value) {
    let body = json!({ "holder": holder, "epoch": epoch });
    post(
        app,
        &format!("{}/release", lease_uri(workflow)),
        Some(TOKEN),
        body,
    )
    .await
}

async fn push_under(
    app: &Router,
    request_id: &str,
    workflow: &str,
    expected: u64,
    lease: Option<(&str, u64)>,
) -> (StatusCode, Value) {
    let mut body = push_body(
        request_id,
        workflow,
        expected,
        vec![event("e", expected + 1)],
    );
    if let Some((holder, epoch)) = lease {
        body["lease"] = json!({ "holder": holder, "epoch": epoch });
    }
    post(app, "/v1/namespaces/team/push", Some(TOKEN), body).await
}

/// Asserts a 409 with `code`, and the lease fields the refusal names.
fn assert_refused(answer: &(StatusCode, Value), code: &str, fields: Value) {
    let (status, body) = answer;
    assert_eq!(
        (*status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some(code)),
        "{body}"
    );
    for (name, value) in fields.as_object().unwrap() {
        assert_eq!(&body[name], value, "{name} of {body}");
    }
}

#[tokio::test]
async fn a_lease_is_taken_renewed_released_and_taken_over_under_a_higher_epoch() {
    for backend in Backend::all() {
        let app = backend.server();
        let (status, none) = get(&app, &lease_uri("run-1")).await;
        assert_eq!((status, &none), (StatusCode::OK, &json!({ "lease": null })));

        let (status, lease) = take(
            &app,
            "run-1",
            json!({ "holder": "laptop", "ttlMs": 60_000 }),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{lease}");
        assert_eq!(
            (
                &lease["workflowId"],
                &lease["holder"],
                &lease["epoch"],
                &lease["live"]
            ),
            (&json!("run-1"), &json!("laptop"), &json!(1), &json!(true))
        );
        let ttl = lease["ttlMs"].as_u64().unwrap();
        assert!(ttl > 0 && ttl <= 60_000, "{lease}");

        // While it holds, another device is told who holds it and for how long.
        let held = take(&app, "run-1", json!({ "holder": "phone", "ttlMs": 60_000 })).await;
        assert_refused(
            &held,
            "LEASE_HELD",
            json!({ "workflowId": "run-1", "holder": "laptop", "epoch": 1 }),
        );
        assert!(held.1["expiresInMs"].as_u64().unwrap() <= 60_000);

        // The holder renews it (as a take, or by its epoch) without a new epoch.
        let (_, again) = take(&app, "run-1", json!({ "holder": "laptop", "ttlMs": 1_000 })).await;
        assert_eq!(again["epoch"], 1);
        let (status, renewed) = take(
            &app,
            "run-1",
            json!({ "holder": "laptop", "epoch": 1, "ttlMs": 60_000 }),
        )
        .await;
        assert_eq!(
            (status, &renewed["epoch"]),
            (StatusCode::OK, &json!(1)),
            "{renewed}"
        );

        // Only the holder releases it; then another device takes it, one epoch up.
        let refused = release(&app, "run-1", "phone", 1).await;
        assert_refused(
            &refused,
            "FENCED",
            json!({ "currentHolder": "laptop", "currentEpoch": 1 }),
        );
        assert_eq!(
            release(&app, "run-1", "laptop", 1).await,
            (StatusCode::OK, json!({}))
        );
        assert_eq!(
            release(&app, "run-1", "laptop", 1).await.0,
            StatusCode::OK,
            "released twice"
        );
        let (_, released) = get(&app, &lease_uri("run-1")).await;
        assert_eq!(
            (&released["lease"]["live"], &released["lease"]["ttlMs"]),
            (&json!(false), &json!(0))
        );
        let (status, taken) =
            take(&app, "run-1", json!({ "holder": "phone", "ttlMs": 60_000 })).await;
        assert_eq!(
            (status, &taken["holder"], &taken["epoch"]),
            (StatusCode::OK, &json!("phone"), &json!(2)),
            "{taken}"
        );

        // The former holder's renewal is fenced, and names the lease it lost to.
        let fenced = take(
            &app,
            "run-1",
            json!({ "holder": "laptop", "epoch": 1, "ttlMs": 60_000 }),
        )
        .await;
        assert_refused(
            &fenced,
            "FENCED",
            json!({ "workflowId": "run-1", "holder": "laptop", "epoch": 1, "currentHolder": "phone", "currentEpoch": 2 }),
        );
        let (_, now) = get(&app, &lease_uri("run-1")).await;
        assert_eq!(
            (&now["lease"]["holder"], &now["lease"]["epoch"]),
            (&json!("phone"), &json!(2)),
            "refusals changed nothing"
        );

        // An expired lease is taken over without a release.
        take(&app, "run-2", json!({ "holder": "laptop", "ttlMs": 1 })).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        let (_, over) = take(&app, "run-2", json!({ "holder": "phone", "ttlMs": 60_000 })).await;
        assert_eq!(
            (&over["holder"], &over["epoch"]),
            (&json!("phone"), &json!(2)),
            "{over}"
        );

        // Leases belong to their namespace.
        let (status, elsewhere) = call(
            &app,
            "GET",
            "/v1/namespaces/other/workflows/run-1/lease",
            Some(OTHER_TOKEN),
            None,
        )
        .await;
        assert_eq!(
            (status, elsewhere),
            (StatusCode::OK, json!({ "lease": null }))
        );
    }
}

#[tokio::test]
async fn a_push_from_a_fenced_holder_or_without_the_lease_is_refused_and_writes_nothing() {
    for backend in Backend::all() {
        let app = backend.server();
        take(&app, "run-1", json!({ "holder": "laptop", "ttlMs": 1 })).await;
        let (status, body) = push_under(&app, "p1", "run-1", 0, Some(("laptop", 1))).await;
        assert_eq!(
            (status, &body["head"]),
            (StatusCode::OK, &json!(1)),
            "{body}"
        );
        // Expired but not taken over: the epoch is still the lease's, so the push lands.
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(
            push_under(&app, "p2", "run-1", 1, Some(("laptop", 1)))
                .await
                .0,
            StatusCode::OK
        );

        let (_, taken) = take(&app, "run-1", json!({ "holder": "phone", "ttlMs": 60_000 })).await;
        assert_eq!(taken["epoch"], 2);
        let cursor = changes(&app, 0).await["cursor"].as_u64().unwrap();
        let fenced = push_under(&app, "p3", "run-1", 2, Some(("laptop", 1))).await;
        assert_refused(
            &fenced,
            "FENCED",
            json!({ "workflowId": "run-1", "holder": "laptop", "epoch": 1, "currentHolder": "phone", "currentEpoch": 2 }),
        );
        assert!(
            fenced.1.get("events").is_none(),
            "a fenced push is not told the events it missed"
        );
        // A push at a stale head is FENCED too, not a sequence conflict with the events.
        assert_refused(
            &push_under(&app, "p4", "run-1", 0, Some(("laptop", 1))).await,
            "FENCED",
            json!({}),
        );
        assert_refused(
            &push_under(&app, "p5", "run-1", 2, None).await,
            "FENCED",
            json!({ "holder": null, "currentEpoch": 2 }),
        );
        assert_refused(
            &push_under(&app, "p6", "run-1", 2, Some(("phone", 1))).await,
            "FENCED",
            json!({}),
        );
        assert_eq!(
            head(&app, "team", "run-1").await,
            2,
            "no refused push wrote"
        );
        assert_eq!(
            changes(&app, 0).await["cursor"].as_u64().unwrap(),
            cursor,
            "nor entered the feed"
        );

        // A push applied under its lease is answered again from the log after the take-over.
        let (status, replayed) = push_under(&app, "p1", "run-1", 0, Some(("laptop", 1))).await;
        assert_eq!(
            (status, &replayed),
            (StatusCode::OK, &json!({ "head": 1, "replayed": true }))
        );
        // A refused push's request id was not used: the new holder's push under it lands.
        let (status, body) = push_under(&app, "p3", "run-1", 2, Some(("phone", 2))).await;
        assert_eq!(
            (status, &body["head"]),
            (StatusCode::OK, &json!(3)),
            "{body}"
        );

        // A workflow never leased takes pushes without a lease, and refuses one that names a lease.
        assert_eq!(
            push_under(&app, "q1", "free", 0, None).await.0,
            StatusCode::OK
        );
        let claimed = push_under(&app, "q2", "free", 1, Some(("laptop", 1))).await;
        assert_refused(
            &claimed,
            "FENCED",
            json!({ "currentHolder": null, "currentEpoch": null }),
        );
        assert_eq!(head(&app, "team", "free").await, 1);
    }
}

#[tokio::test]
async fn lease_requests_with_bad_input_or_no_token_are_refused() {
    for backend in Backend::all() {
        let app = backend.server();
        for (body, field) in [
            (json!({ "holder": "laptop", "ttlMs": 0 }), "ttlMs"),
            (
                json!({ "holder": "laptop", "ttlMs": 31u64 * 24 * 3_600_000 }),
                "ttlMs",
            ),
            (json!({ "holder": "", "ttlMs": 1_000 }), "holder"),
            (json!({ "holder": "laptop" }), "body"),
            (
                json!({ "holder": "laptop", "ttlMs": 1_000, "owner": "x" }),
                "body",
            ),
            (
                json!({ "holder": "laptop", "epoch": 0, "ttlMs": 1_000 }),
                "epoch",
            ),
        ] {
            let (status, answer) = take(&app, "run-1", body.clone()).await;
            assert_eq!(
                (status, answer["code"].as_str(), answer["field"].as_str()),
                (StatusCode::BAD_REQUEST, Some("INVALID_INPUT"), Some(field)),
                "{body}: {answer}"
            );
        }
        // A push's lease is checked as its other fields are, before anything is written.
        for (lease, field) in [
            (json!({ "holder": "", "epoch": 1 }), "lease.holder"),
            (json!({ "holder": "laptop", "epoch": 0 }), "lease.epoch"),
        ] {
            let mut body = push_body("p1", "run-1", 0, vec![event("e", 1)]);
            body["lease"] = lease;
            let (status, answer) = post(&app, "/v1/namespaces/team/push", Some(TOKEN), body).await;
            assert_eq!(
                (status, answer["field"].as_str()),
                (StatusCode::BAD_REQUEST, Some(field)),
                "{answer}"
            );
        }
        assert_eq!(head(&app, "team", "run-1").await, 0);
        let body = json!({ "holder": "laptop", "ttlMs": 1_000 });
        assert_eq!(
            post(&app, &lease_uri("run-1"), None, body.clone()).await.0,
            StatusCode::UNAUTHORIZED
        );
        let foreign = post(
            &app,
            "/v1/namespaces/other/workflows/run-1/lease",
            Some(TOKEN),
            body,
        )
        .await;
        assert_eq!(foreign.0, StatusCode::FORBIDDEN);
        assert_eq!(
            get(&app, &lease_uri("run-1")).await.1,
            json!({ "lease": null }),
            "nothing was taken"
        );
    }
}

/// A device pushes as fast as it can, under `former` (or without a lease), while another
/// device takes the run's lease (waiting for the former's to expire). Once the new holder has
/// its lease and has read the head, its push at that head lands: no push of the former came
/// between. On SQLite the server's single writer orders them anyway; on PostgreSQL the pushes
/// and the take run on connections of their own, and only the lease lock orders them.
async fn take_over_while_pushing(
    app: &Router,
    workflow: &str,
    former: Option<(&'static str, u64)>,
) {
    let pusher = {
        let (app, workflow) = (app.clone(), workflow.to_owned());
        tokio::spawn(async move {
            let mut head = 0;
            loop {
                let id = format!("{workflow}-former-{head}");
                let (status, body) = push_under(&app, &id, &workflow, head, former).await;
                if status != StatusCode::OK {
                    return (head, body);
                }
                head = body["head"].as_u64().unwrap();
            }
        })
    };
    // Some pushes land first.
    while head(app, "team", workflow).await < 3 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let taken = loop {
        let (status, body) =
            take(app, workflow, json!({ "holder": "phone", "ttlMs": 60_000 })).await;
        if status == StatusCode::OK {
            break body;
        }
        assert_eq!(body["code"], "LEASE_HELD", "{body}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let epoch = taken["epoch"].as_u64().unwrap();
    assert_eq!(epoch, former.map_or(1, |(_, epoch)| epoch + 1));
    let read = head(app, "team", workflow).await;
    let (status, body) = push_under(
        app,
        &format!("{workflow}-phone"),
        workflow,
        read,
        Some(("phone", epoch)),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the new holder's push at the head it read: {body}"
    );
    let (last_head, refusal) = pusher.await.unwrap();
    assert_eq!(refusal["code"], "FENCED", "{refusal}");
    assert_eq!(
        last_head, read,
        "the former pushed up to {last_head}, the new holder read {read}"
    );
    assert_eq!(head(app, "team", workflow).await, read + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_former_holder_pushing_through_a_take_over_never_advances_the_run_after_it() {
    for backend in Backend::all() {
        let app = backend.server();
        for round in 0..3 {
            let workflow = format!("held-{round}");
            take(&app, &workflow, json!({ "holder": "laptop", "ttlMs": 100 })).await;
            take_over_while_pushing(&app, &workflow, Some(("laptop", 1))).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pushes_without_a_lease_never_advance_a_run_after_its_first_lease() {
    for backend in Backend::all() {
        let app = backend.server();
        for round in 0..5 {
            take_over_while_pushing(&app, &format!("free-{round}"), None).await;
        }
    }
}
