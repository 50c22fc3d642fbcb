//! The visibility index: upsert and get, typed filters, newest-first paging by cursor, counts,
//! refusals of bad input, and values that look like SQL.

use runstore::*;
use serde_json::{json, Value};

use super::{after_reopen, expect_code, Backend, Case, Store};

pub const CASES: &[Case] = cases![
    upsert_then_get_round_trips_and_upsert_replaces,
    list_is_newest_start_first_with_workflow_id_breaking_ties,
    paging_to_the_end_yields_each_record_once_in_order,
    paging_a_filtered_listing_matches_its_count,
    filters_by_type_status_set_and_time_ranges,
    attribute_predicates_compare_within_a_json_type,
    sql_in_filter_and_attribute_values_is_plain_data,
    invalid_filters_are_refused,
    unknown_filter_fields_and_operators_are_refused,
    malformed_cursors_and_page_sizes_are_refused,
    invalid_records_are_refused_and_write_nothing,
    a_lower_head_never_overwrites_a_newer_record,
    without_heads_an_older_run_or_a_reopened_run_is_refused,
    visibility_survives_reopen,
];

fn record(id: &str, workflow_type: &str, status: &str, start: Millis) -> VisibilityRecord {
    VisibilityRecord {
        workflow_id: id.into(),
        run_id: format!("{id}-run"),
        workflow_type: workflow_type.into(),
        status: status.into(),
        start_time: start,
        close_time: None,
        failed_step: None,
        failure_reason: None,
        search_attributes: json!({}),
        head: None,
    }
}

fn with_attributes(mut record: VisibilityRecord, attributes: Value) -> VisibilityRecord {
    record.search_attributes = attributes;
    record
}

fn ids(page: &VisibilityPage) -> Vec<&str> {
    page.records
        .iter()
        .map(|r| r.workflow_id.as_str())
        .collect()
}

/// Every id matching `filter`, read through one large page.
fn all_ids(store: &Store, filter: &VisibilityFilter) -> Vec<String> {
    let page = store.list_visibility(filter, 1000, None).unwrap();
    assert_eq!(page.next_cursor, None);
    let found: Vec<String> = page.records.into_iter().map(|r| r.workflow_id).collect();
    assert_eq!(
        store.count_visibility(filter).unwrap(),
        found.len() as u64,
        "count of {filter:?}"
    );
    found
}

fn cmp(key: &str, op: AttributeOp, value: impl Into<Value>) -> AttributePredicate {
    AttributePredicate::compare(key, op, value)
}

fn search(predicates: Vec<AttributePredicate>) -> VisibilityFilter {
    VisibilityFilter {
        search: predicates,
        ..Default::default()
    }
}

fn upsert_then_get_round_trips_and_upsert_replaces(backend: &dyn Backend) {
    let store = backend.fresh().open();
    assert_eq!(store.get_visibility("wf").unwrap(), None);
    let running = with_attributes(
        record("wf", "order", "running", 100),
        json!({"customer": "c-1", "amount": 12.5, "tags": ["a", "b"], "note": null}),
    );
    store.upsert_visibility(&running).unwrap();
    assert_eq!(store.get_visibility("wf").unwrap(), Some(running.clone()));

    let failed = VisibilityRecord {
        run_id: "wf-run-2".into(),
        status: "failed".into(),
        close_time: Some(150),
        failed_step: Some("charge".into()),
        failure_reason: Some("card declined".into()),
        search_attributes: json!({"customer": "c-1"}),
        ..running
    };
    store.upsert_visibility(&failed).unwrap();
    assert_eq!(store.get_visibility("wf").unwrap(), Some(failed));
    assert_eq!(
        store
            .count_visibility(&VisibilityFilter::default())
            .unwrap(),
        1
    );
}

fn list_is_newest_start_first_with_workflow_id_breaking_ties(backend: &dyn Backend) {
    let store = backend.fresh().open();
    for (id, start) in [("b", 200), ("a", 100), ("d", 200), ("c", 300), ("e", 200)] {
        store
            .upsert_visibility(&record(id, "t", "running", start))
            .unwrap();
    }
    let page = store
        .list_visibility(&VisibilityFilter::default(), 10, None)
        .unwrap();
    assert_eq!(ids(&page), ["c", "b", "d", "e", "a"]);
    assert_eq!(page.next_cursor, None);
}

fn paging_to_the_end_yields_each_record_once_in_order(backend: &dyn Backend) {
    let store = backend.fresh().open();
    // 23 records over 8 distinct start times, so that pages split runs of equal start times.
    for i in 0..23 {
        let start = i64::from(i % 8) * 10;
        store
            .upsert_visibility(&record(&format!("wf-{i:02}"), "t", "running", start))
            .unwrap();
    }
    let filter = VisibilityFilter::default();
    let expected = all_ids(&store, &filter);
    let mut by_hand: Vec<(Millis, String)> = (0..23)
        .map(|i| (i64::from(i % 8) * 10, format!("wf-{i:02}")))
        .collect();
    by_hand.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let by_hand: Vec<String> = by_hand.into_iter().map(|(_, id)| id).collect();
    assert_eq!(expected, by_hand);

    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = store
            .list_visibility(&filter, 4, cursor.as_deref())
            .unwrap();
        pages += 1;
        assert!(page.records.len() <= 4);
        seen.extend(page.records.iter().map(|r| r.workflow_id.clone()));
        match page.next_cursor {
            Some(next) => {
                assert_eq!(page.records.len(), 4, "only the last page is short");
                cursor = Some(next);
            }
            None => break,
        }
    }
    assert_eq!(pages, 6);
    assert_eq!(seen, expected);

    // An exact multiple of the page size ends without an empty page.
    let page = store.list_visibility(&filter, 23, None).unwrap();
    assert_eq!((page.records.len(), page.next_cursor), (23, None));
    let first = store.list_visibility(&filter, 22, None).unwrap();
    let last = store
        .list_visibility(&filter, 22, first.next_cursor.as_deref())
        .unwrap();
    assert_eq!(ids(&last), [expected[22].as_str()]);
    assert_eq!(last.next_cursor, None);
}

fn paging_a_filtered_listing_matches_its_count(backend: &dyn Backend) {
    let store = backend.fresh().open();
    for i in 0..30 {
        let status = if i % 3 == 0 { "completed" } else { "running" };
        let r = with_attributes(
            record(&format!("wf-{i:02}"), "t", status, 1000 - i64::from(i)),
            json!({"shard": i % 4}),
        );
        store.upsert_visibility(&r).unwrap();
    }
    let filter = VisibilityFilter {
        statuses: vec!["running".into()],
        search: vec![AttributePredicate::compare("shard", AttributeOp::Lt, 2)],
        ..Default::default()
    };
    let expected = all_ids(&store, &filter);
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = store
            .list_visibility(&filter, 3, cursor.as_deref())
            .unwrap();
        seen.extend(page.records.into_iter().map(|r| r.workflow_id));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(seen, expected);
    assert_eq!(store.count_visibility(&filter).unwrap(), 11);
}

fn filters_by_type_status_set_and_time_ranges(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let closed = |mut r: VisibilityRecord, at: Millis| {
        r.close_time = Some(at);
        r
    };
    for r in [
        record("a", "order", "running", 100),
        closed(record("b", "order", "completed", 200), 250),
        closed(record("c", "mail", "failed", 300), 400),
        record("d", "mail", "paused", 400),
        closed(record("e", "order", "terminated", 500), 500),
    ] {
        store.upsert_visibility(&r).unwrap();
    }
    let filter = |f: VisibilityFilter| all_ids(&store, &f);
    assert_eq!(
        filter(VisibilityFilter::default()),
        ["e", "d", "c", "b", "a"]
    );
    let orders = VisibilityFilter {
        workflow_type: Some("order".into()),
        ..Default::default()
    };
    assert_eq!(filter(orders.clone()), ["e", "b", "a"]);
    let one_status = VisibilityFilter {
        statuses: vec!["running".into()],
        ..orders.clone()
    };
    assert_eq!(filter(one_status), ["a"]);
    let status_set = VisibilityFilter {
        statuses: vec!["completed".into(), "terminated".into(), "failed".into()],
        ..Default::default()
    };
    assert_eq!(filter(status_set), ["e", "c", "b"]);
    let started = VisibilityFilter {
        start_time: Some(TimeRange {
            from: Some(200),
            before: Some(400),
        }),
        ..Default::default()
    };
    assert_eq!(filter(started), ["c", "b"]);
    let open_ended = VisibilityFilter {
        start_time: Some(TimeRange {
            from: Some(400),
            before: None,
        }),
        ..Default::default()
    };
    assert_eq!(filter(open_ended), ["e", "d"]);
    // Any close-time range matches closed records only.
    let any_close = VisibilityFilter {
        close_time: Some(TimeRange::default()),
        ..Default::default()
    };
    assert_eq!(filter(any_close), ["e", "c", "b"]);
    let closed_before = VisibilityFilter {
        close_time: Some(TimeRange {
            from: None,
            before: Some(500),
        }),
        ..Default::default()
    };
    assert_eq!(filter(closed_before), ["c", "b"]);
    let empty_range = VisibilityFilter {
        start_time: Some(TimeRange {
            from: Some(300),
            before: Some(300),
        }),
        ..Default::default()
    };
    assert!(filter(empty_range).is_empty());
    let nothing = VisibilityFilter {
        workflow_type: Some("unknown".into()),
        ..Default::default()
    };
    assert!(filter(nothing).is_empty());
}

fn attribute_predicates_compare_within_a_json_type(backend: &dyn Backend) {
    use AttributeOp::*;
    let store = backend.fresh().open();
    for (id, attributes) in [
        ("n1", json!({"amount": 5, "region": "eu", "vip": true})),
        ("n2", json!({"amount": 12.5, "region": "us", "vip": false})),
        ("n3", json!({"amount": 20, "region": "eu-west"})),
        ("s1", json!({"amount": "5", "region": null, "a.b": 1})),
        ("x", json!({"nested": {"amount": 5}})),
    ] {
        let r = with_attributes(record(id, "t", "running", 0), attributes);
        store.upsert_visibility(&r).unwrap();
    }
    let find = |predicates: Vec<AttributePredicate>| {
        let mut found = all_ids(&store, &search(predicates));
        found.sort();
        found
    };
    assert_eq!(find(vec![cmp("amount", Eq, 5)]), ["n1"]);
    assert_eq!(find(vec![cmp("amount", Eq, 5.0)]), ["n1"]);
    assert_eq!(find(vec![cmp("amount", Eq, "5")]), ["s1"]);
    assert_eq!(find(vec![cmp("amount", Gt, 5)]), ["n2", "n3"]);
    assert_eq!(find(vec![cmp("amount", Gte, 12.5)]), ["n2", "n3"]);
    assert_eq!(find(vec![cmp("amount", Lt, 12.5)]), ["n1"]);
    assert_eq!(find(vec![cmp("amount", Lte, 20)]), ["n1", "n2", "n3"]);
    // Strings order by bytes, and never against numbers.
    assert_eq!(find(vec![cmp("region", Gt, "eu")]), ["n2", "n3"]);
    assert_eq!(find(vec![cmp("amount", Gte, "0")]), ["s1"]);
    assert_eq!(find(vec![cmp("vip", Eq, true)]), ["n1"]);
    assert_eq!(find(vec![cmp("vip", Eq, 1)]), Vec::<String>::new());
    // ne is the complement of eq, records without the attribute included.
    assert_eq!(find(vec![cmp("vip", Ne, true)]), ["n2", "n3", "s1", "x"]);
    assert_eq!(find(vec![cmp("amount", Ne, 5)]), ["n2", "n3", "s1", "x"]);
    assert_eq!(
        find(vec![cmp("region", In, json!(["us", "eu-west", 7]))]),
        ["n2", "n3"]
    );
    assert_eq!(
        find(vec![cmp("amount", In, json!([20, "5"]))]),
        ["n3", "s1"]
    );
    // exists sees a JSON null; keys are flat, so "a.b" is one key and "amount" is top-level.
    assert_eq!(
        find(vec![AttributePredicate::exists("region")]),
        ["n1", "n2", "n3", "s1"]
    );
    assert_eq!(find(vec![AttributePredicate::not_exists("region")]), ["x"]);
    assert_eq!(find(vec![AttributePredicate::exists("a.b")]), ["s1"]);
    assert_eq!(
        find(vec![AttributePredicate::exists("a")]),
        Vec::<String>::new()
    );
    // Predicates combine with AND.
    assert_eq!(
        find(vec![
            cmp("region", In, json!(["eu", "eu-west"])),
            cmp("amount", Gt, 6)
        ]),
        ["n3"]
    );
    let total = store
        .count_visibility(&VisibilityFilter::default())
        .unwrap();
    for value in [json!(5), json!("eu"), json!(true)] {
        for key in ["amount", "region", "vip"] {
            let eq = store
                .count_visibility(&search(vec![cmp(key, Eq, value.clone())]))
                .unwrap();
            let ne = store
                .count_visibility(&search(vec![cmp(key, Ne, value.clone())]))
                .unwrap();
            assert_eq!(eq + ne, total, "{key} {value}");
        }
    }
}

fn sql_in_filter_and_attribute_values_is_plain_data(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let hostile = [
        "x' OR '1'='1",
        "'; DROP TABLE visibility; --",
        "\") OR 1=1 --",
        "running' UNION SELECT * FROM namespaces --",
    ];
    for (i, text) in hostile.iter().enumerate() {
        let r = with_attributes(
            record(
                &format!("{text}-{i}"),
                text,
                text,
                i64::try_from(i).unwrap(),
            ),
            json!({ "note": text }),
        );
        store.upsert_visibility(&r).unwrap();
    }
    store
        .upsert_visibility(&with_attributes(
            record("plain", "order", "running", 99),
            json!({"note": "hello"}),
        ))
        .unwrap();
    for (i, text) in hostile.iter().enumerate() {
        let by_type = VisibilityFilter {
            workflow_type: Some((*text).into()),
            ..Default::default()
        };
        assert_eq!(all_ids(&store, &by_type), [format!("{text}-{i}")]);
        let by_status = VisibilityFilter {
            statuses: vec![(*text).into()],
            ..Default::default()
        };
        assert_eq!(all_ids(&store, &by_status), [format!("{text}-{i}")]);
        let by_attribute = search(vec![AttributePredicate::compare(
            "note",
            AttributeOp::Eq,
            *text,
        )]);
        assert_eq!(all_ids(&store, &by_attribute), [format!("{text}-{i}")]);
        assert_eq!(
            store
                .get_visibility(&format!("{text}-{i}"))
                .unwrap()
                .unwrap()
                .workflow_type,
            *text
        );
    }
    // Spliced into SQL text, this would match every record.
    let always_true = VisibilityFilter {
        workflow_type: Some("order' OR '1'='1".into()),
        ..Default::default()
    };
    assert!(all_ids(&store, &always_true).is_empty());
    // The table is intact and holds every record.
    assert_eq!(
        store
            .count_visibility(&VisibilityFilter::default())
            .unwrap(),
        5
    );
    // A key crafted to close the JSON path quote is refused, not interpreted.
    let error = expect_code(
        store.count_visibility(&search(vec![AttributePredicate::exists(
            "note\") OR 1=1 --",
        )])),
        "INVALID_INPUT",
    );
    assert!(matches!(&error, Error::InvalidInput { field, .. } if field == "filter.search[0].key"));
}

fn invalid_filters_are_refused(backend: &dyn Backend) {
    use AttributeOp::*;
    let store = backend.fresh().open();
    store
        .upsert_visibility(&record("wf", "t", "running", 1))
        .unwrap();
    let refused = |filter: VisibilityFilter, expected_field: &str| {
        let list = store.list_visibility(&filter, 10, None);
        let error = expect_code(list, "INVALID_INPUT");
        match &error {
            Error::InvalidInput { field, .. } => assert_eq!(field, expected_field, "{error}"),
            other => panic!("unexpected {other}"),
        }
        expect_code(store.count_visibility(&filter), "INVALID_INPUT");
    };
    let too_long = "k".repeat(MAX_ATTRIBUTE_KEY_BYTES + 1);
    for key in ["", "has space", "ключ", "quote\"", too_long.as_str()] {
        refused(
            search(vec![AttributePredicate::exists(key)]),
            "filter.search[0].key",
        );
    }
    let ok = AttributePredicate::exists("k");
    refused(
        search(vec![ok.clone(), cmp("k", Eq, json!({"a": 1}))]),
        "filter.search[1].value",
    );
    refused(
        search(vec![cmp("k", Eq, json!([1]))]),
        "filter.search[0].value",
    );
    refused(
        search(vec![cmp("k", Eq, Value::Null)]),
        "filter.search[0].value",
    );
    refused(search(vec![cmp("k", Gt, true)]), "filter.search[0].value");
    refused(
        search(vec![cmp("k", In, json!([]))]),
        "filter.search[0].value",
    );
    refused(
        search(vec![cmp("k", In, json!("a"))]),
        "filter.search[0].value",
    );
    refused(
        search(vec![cmp("k", In, json!([[1]]))]),
        "filter.search[0].value",
    );
    refused(search(vec![cmp("k", Exists, 1)]), "filter.search[0].value");
    refused(
        search(vec![ok.clone(); MAX_PREDICATES + 1]),
        "filter.search",
    );
    refused(
        VisibilityFilter {
            start_time: Some(TimeRange {
                from: Some(10),
                before: Some(9),
            }),
            ..Default::default()
        },
        "filter.startTime",
    );
    refused(
        VisibilityFilter {
            close_time: Some(TimeRange {
                from: Some(10),
                before: Some(9),
            }),
            ..Default::default()
        },
        "filter.closeTime",
    );
    refused(
        VisibilityFilter {
            workflow_type: Some(String::new()),
            ..Default::default()
        },
        "filter.workflowType",
    );
    refused(
        VisibilityFilter {
            statuses: vec!["running".into(), String::new()],
            ..Default::default()
        },
        "filter.statuses[1]",
    );
    // The largest accepted filter works.
    let page = store
        .list_visibility(&search(vec![ok; MAX_PREDICATES]), 10, None)
        .unwrap();
    assert!(page.records.is_empty());
}

fn unknown_filter_fields_and_operators_are_refused(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let parsed = VisibilityFilter::from_json(json!({
        "workflowType": "order",
        "statuses": ["running", "paused"],
        "startTime": {"from": 1, "before": 2},
        "search": [
            {"key": "region", "op": "in", "value": ["eu"]},
            {"key": "vip", "op": "exists"},
            {"key": "tier", "op": "notExists", "value": null}
        ]
    }))
    .unwrap();
    assert_eq!(parsed.search[0].op, AttributeOp::In);
    assert_eq!(parsed.search[2].value, None);
    store.list_visibility(&parsed, 10, None).unwrap();

    for bad in [
        json!({"search": [{"key": "k", "op": "like", "value": "a%"}]}),
        json!({"search": [{"key": "k", "op": "eq", "value": 1, "sql": "1=1"}]}),
        json!({"orderBy": "start_time; DROP TABLE visibility"}),
        json!({"startTime": {"from": 1, "after": 2}}),
        json!({"statuses": "running"}),
        json!({"search": [{"op": "exists"}]}),
    ] {
        let error = expect_code(VisibilityFilter::from_json(bad.clone()), "INVALID_INPUT");
        assert!(
            matches!(&error, Error::InvalidInput { field, .. } if field == "filter"),
            "{bad}: {error}"
        );
    }
    let error =
        VisibilityFilter::from_json(json!({"search": [{"key": "k", "op": "like"}]})).unwrap_err();
    assert!(error.to_string().contains("like"), "{error}");
}

fn malformed_cursors_and_page_sizes_are_refused(backend: &dyn Backend) {
    let store = backend.fresh().open();
    for i in 0..3 {
        store
            .upsert_visibility(&record(&format!("wf{i}"), "t", "running", i))
            .unwrap();
    }
    let filter = VisibilityFilter::default();
    let cursor = store
        .list_visibility(&filter, 1, None)
        .unwrap()
        .next_cursor
        .expect("a second page");
    let long = "ab".repeat(2000);
    for bad in [
        "",
        "not a cursor",
        "0",
        "zz",
        &cursor[..cursor.len() - 1],
        &cursor[..18],
        &format!("02{}", &cursor[2..]),
        "' OR 1=1 --",
        &long,
    ] {
        let error = expect_code(
            store.list_visibility(&filter, 1, Some(bad)),
            "INVALID_INPUT",
        );
        assert!(
            matches!(&error, Error::InvalidInput { field, .. } if field == "cursor"),
            "{bad}: {error}"
        );
    }
    let error = expect_code(store.list_visibility(&filter, 0, None), "INVALID_INPUT");
    assert!(matches!(&error, Error::InvalidInput { field, .. } if field == "pageSize"));
    // The cursor is a position: it continues the same order whatever the filter.
    let rest = store.list_visibility(&filter, 10, Some(&cursor)).unwrap();
    assert_eq!(ids(&rest), ["wf1", "wf0"]);
}

fn invalid_records_are_refused_and_write_nothing(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let good = record("wf", "t", "running", 100);
    let cases: Vec<(VisibilityRecord, &str)> = vec![
        (record("", "t", "running", 1), "workflowId"),
        (
            VisibilityRecord {
                run_id: String::new(),
                ..good.clone()
            },
            "runId",
        ),
        (record("wf", "", "running", 1), "workflowType"),
        (record("wf", "t", "", 1), "status"),
        (
            VisibilityRecord {
                close_time: Some(99),
                ..good.clone()
            },
            "closeTime",
        ),
        (
            with_attributes(good.clone(), json!(["a"])),
            "searchAttributes",
        ),
        (
            with_attributes(good.clone(), json!("a")),
            "searchAttributes",
        ),
        (
            with_attributes(good.clone(), Value::Null),
            "searchAttributes",
        ),
        (
            with_attributes(good.clone(), json!({"bad key": 1})),
            "searchAttributes",
        ),
        (
            with_attributes(good.clone(), json!({"big": "x".repeat(MAX_DOCUMENT_BYTES)})),
            "searchAttributes",
        ),
        (
            VisibilityRecord {
                failed_step: Some("s".repeat(MAX_ID_BYTES + 1)),
                ..good.clone()
            },
            "failedStep",
        ),
        (
            VisibilityRecord {
                failure_reason: Some("r".repeat(MAX_DOCUMENT_BYTES + 1)),
                ..good.clone()
            },
            "failureReason",
        ),
        (
            VisibilityRecord {
                head: Some(u64::MAX),
                ..good.clone()
            },
            "head",
        ),
    ];
    for (bad, expected_field) in cases {
        let error = expect_code(store.upsert_visibility(&bad), "INVALID_INPUT");
        match &error {
            Error::InvalidInput { field, .. } => assert_eq!(field, expected_field, "{error}"),
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(
        store
            .count_visibility(&VisibilityFilter::default())
            .unwrap(),
        0
    );
    // A refused update leaves the stored record as it was.
    store.upsert_visibility(&good).unwrap();
    expect_code(
        store.upsert_visibility(&with_attributes(good.clone(), json!([1]))),
        "INVALID_INPUT",
    );
    assert_eq!(store.get_visibility("wf").unwrap(), Some(good));
    // Records arriving from JSON without attributes get an empty object.
    let from_json: VisibilityRecord = serde_json::from_value(json!({
        "workflowId": "j", "runId": "r", "workflowType": "t", "status": "running", "startTime": 5
    }))
    .unwrap();
    assert_eq!(from_json.search_attributes, json!({}));
    assert!(serde_json::from_value::<VisibilityRecord>(json!({
        "workflowId": "j", "runId": "r", "workflowType": "t", "status": "running",
        "startTime": 5, "extra": 1
    }))
    .is_err());
}

fn visibility_survives_reopen(backend: &dyn Backend) {
    let location = backend.fresh();
    let store = location.open();
    for i in 0..5 {
        let r = with_attributes(
            record(&format!("wf{i}"), "t", "running", i),
            json!({"n": i}),
        );
        store.upsert_visibility(&r).unwrap();
    }
    let filter = search(vec![AttributePredicate::compare("n", AttributeOp::Gte, 1)]);
    let first = store.list_visibility(&filter, 2, None).unwrap();
    assert_eq!(ids(&first), ["wf4", "wf3"]);
    let cursor = first.next_cursor.clone().unwrap();
    let before = store.get_visibility("wf2").unwrap();
    after_reopen(location.as_ref(), store, |store| {
        assert_eq!(store.get_visibility("wf2").unwrap(), before);
        assert_eq!(store.count_visibility(&filter).unwrap(), 4);
        // A cursor from before the reopen still continues the listing.
        let rest = store.list_visibility(&filter, 10, Some(&cursor)).unwrap();
        assert_eq!(ids(&rest), ["wf2", "wf1"]);
    });
}

/// `record` at journal head `head`.
fn at_head(record: VisibilityRecord, head: u64) -> VisibilityRecord {
    VisibilityRecord {
        head: Some(head),
        ..record
    }
}

/// `record` closed at `at` with `status`.
fn closed(record: VisibilityRecord, status: &str, at: Millis) -> VisibilityRecord {
    VisibilityRecord {
        status: status.into(),
        close_time: Some(at),
        ..record
    }
}

fn a_lower_head_never_overwrites_a_newer_record(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let running = at_head(record("wf", "t", "running", 100), 5);
    store.upsert_visibility(&running).unwrap();
    let done = closed(
        at_head(record("wf", "t", "running", 100), 9),
        "completed",
        150,
    );
    store.upsert_visibility(&done).unwrap();
    // A late writer of head 5 would reopen the finished record.
    let error = expect_code(store.upsert_visibility(&running), "CONFLICT");
    assert_eq!(
        error,
        Error::Conflict {
            entity: "visibility",
            id: "wf".into(),
            expected: Some(5),
            actual: Some(9)
        }
    );
    assert_eq!(store.get_visibility("wf").unwrap(), Some(done.clone()));
    // The same head again rewrites (a retried upsert succeeds); a higher one replaces, even
    // a run of an earlier start time: the journal head decides.
    let retried = with_attributes(done.clone(), json!({"retried": true}));
    store.upsert_visibility(&retried).unwrap();
    assert_eq!(store.get_visibility("wf").unwrap(), Some(retried));
    let next = at_head(
        VisibilityRecord {
            run_id: "r2".into(),
            ..record("wf", "t", "running", 90)
        },
        10,
    );
    store.upsert_visibility(&next).unwrap();
    assert_eq!(store.get_visibility("wf").unwrap(), Some(next));
    // The head reads back in listings too.
    let page = store
        .list_visibility(&VisibilityFilter::default(), 10, None)
        .unwrap();
    assert_eq!(page.records[0].head, Some(10));
}

fn without_heads_an_older_run_or_a_reopened_run_is_refused(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let run = |run_id: &str, start: Millis| VisibilityRecord {
        run_id: run_id.into(),
        ..record("wf", "t", "running", start)
    };
    let no_revisions = Error::Conflict {
        entity: "visibility",
        id: "wf".into(),
        expected: None,
        actual: None,
    };
    store.upsert_visibility(&run("r2", 200)).unwrap();
    // Another run that started earlier is older: refused. One starting at the same time or
    // later replaces.
    let error = expect_code(store.upsert_visibility(&run("r1", 199)), "CONFLICT");
    assert_eq!(error, no_revisions);
    assert_eq!(store.get_visibility("wf").unwrap(), Some(run("r2", 200)));
    store.upsert_visibility(&run("r3", 200)).unwrap();
    let done = closed(run("r3", 200), "completed", 250);
    store.upsert_visibility(&done).unwrap();
    // The same run, open again, would reopen the closed record: refused.
    let error = expect_code(store.upsert_visibility(&run("r3", 200)), "CONFLICT");
    assert_eq!(error, no_revisions);
    assert_eq!(store.get_visibility("wf").unwrap(), Some(done.clone()));
    // A closed record of the same run may still be rewritten (a corrected status, say).
    let failed = closed(run("r3", 200), "failed", 260);
    store.upsert_visibility(&failed).unwrap();
    // A head on one side only: these rules still apply, and the record is replaced whole.
    let headed = at_head(closed(run("r4", 300), "completed", 310), 40);
    store.upsert_visibility(&headed).unwrap();
    expect_code(store.upsert_visibility(&run("r4", 300)), "CONFLICT");
    expect_code(store.upsert_visibility(&run("r0", 1)), "CONFLICT");
    assert_eq!(store.get_visibility("wf").unwrap(), Some(headed));
    let newer = run("r5", 400);
    store.upsert_visibility(&newer).unwrap();
    assert_eq!(store.get_visibility("wf").unwrap().unwrap().head, None);
}
