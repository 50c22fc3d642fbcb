//! Durable timers: schedule (an upsert), due timers as of a time, cancel, list, reopen.

use runstore::*;

use super::{after_reopen, expect_code, Backend, Case};

pub const CASES: &[Case] = cases![
    scheduled_timers_list_by_fire_time_then_ids,
    scheduling_again_replaces_the_fire_time,
    due_timers_include_the_as_of_time_and_exclude_later_ones,
    cancel_removes_one_timer_and_says_whether_it_existed,
    invalid_ids_are_refused_and_nothing_is_written,
    timers_survive_reopen,
];

fn timer(workflow_id: &str, timer_id: &str, fire_at: Millis) -> Timer {
    Timer {
        workflow_id: workflow_id.into(),
        timer_id: timer_id.into(),
        fire_at,
    }
}

fn scheduled_timers_list_by_fire_time_then_ids(backend: &dyn Backend) {
    let store = backend.fresh().open();
    assert!(store
        .list_timers(&PageRequest::default())
        .unwrap()
        .items
        .is_empty());
    store.schedule_timer("b", "t1", 30).unwrap();
    store.schedule_timer("b", "t2", 10).unwrap();
    store.schedule_timer("a", "t9", 30).unwrap();
    store.schedule_timer("a", "t1", 30).unwrap();
    // The same timer id in another workflow is another timer.
    store.schedule_timer("c", "t2", 20).unwrap();
    assert_eq!(
        store.list_timers(&PageRequest::default()).unwrap().items,
        [
            timer("b", "t2", 10),
            timer("c", "t2", 20),
            timer("a", "t1", 30),
            timer("a", "t9", 30),
            timer("b", "t1", 30),
        ]
    );
}

fn scheduling_again_replaces_the_fire_time(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store.schedule_timer("wf", "sleep", 100).unwrap();
    store.schedule_timer("wf", "other", 150).unwrap();
    store.schedule_timer("wf", "sleep", 200).unwrap();
    assert_eq!(
        store.list_timers(&PageRequest::default()).unwrap().items,
        [timer("wf", "other", 150), timer("wf", "sleep", 200)]
    );
    // Moving it earlier works too: the upsert replaces, it does not keep the minimum.
    store.schedule_timer("wf", "sleep", 50).unwrap();
    assert_eq!(
        store.due_timers(60, &PageRequest::default()).unwrap().items,
        [timer("wf", "sleep", 50)]
    );
}

fn due_timers_include_the_as_of_time_and_exclude_later_ones(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store.schedule_timer("b", "x", 100).unwrap();
    store.schedule_timer("a", "y", 100).unwrap();
    store.schedule_timer("a", "x", 100).unwrap();
    store.schedule_timer("c", "early", 40).unwrap();
    store.schedule_timer("d", "late", 101).unwrap();
    store.schedule_timer("e", "past", -5).unwrap();
    assert_eq!(
        store.due_timers(-6, &PageRequest::default()).unwrap().items,
        []
    );
    assert_eq!(
        store
            .due_timers(99, &PageRequest::default())
            .unwrap()
            .items
            .len(),
        2
    );
    assert_eq!(
        store
            .due_timers(100, &PageRequest::default())
            .unwrap()
            .items,
        [
            timer("e", "past", -5),
            timer("c", "early", 40),
            timer("a", "x", 100),
            timer("a", "y", 100),
            timer("b", "x", 100),
        ]
    );
    // Reading due timers does not consume them.
    assert_eq!(
        store
            .due_timers(100, &PageRequest::default())
            .unwrap()
            .items
            .len(),
        5
    );
    assert_eq!(
        store
            .due_timers(Millis::MAX, &PageRequest::default())
            .unwrap()
            .items
            .len(),
        6
    );
}

fn cancel_removes_one_timer_and_says_whether_it_existed(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store.schedule_timer("wf", "a", 10).unwrap();
    store.schedule_timer("wf", "b", 20).unwrap();
    store.schedule_timer("other", "a", 30).unwrap();
    assert!(store.cancel_timer("wf", "a").unwrap());
    assert!(!store.cancel_timer("wf", "a").unwrap());
    assert!(!store.cancel_timer("nobody", "a").unwrap());
    assert_eq!(
        store.list_timers(&PageRequest::default()).unwrap().items,
        [timer("wf", "b", 20), timer("other", "a", 30)]
    );
    assert_eq!(
        store.due_timers(10, &PageRequest::default()).unwrap().items,
        []
    );
    // A cancelled timer can be scheduled again.
    store.schedule_timer("wf", "a", 5).unwrap();
    assert_eq!(
        store.due_timers(10, &PageRequest::default()).unwrap().items,
        [timer("wf", "a", 5)]
    );
}

fn invalid_ids_are_refused_and_nothing_is_written(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let long = "x".repeat(MAX_ID_BYTES + 1);
    let error = expect_code(store.schedule_timer("", "t", 1), "INVALID_INPUT");
    assert!(
        matches!(&error, Error::InvalidInput { field, .. } if field == "workflowId"),
        "{error:?}"
    );
    let error = expect_code(store.schedule_timer("wf", "", 1), "INVALID_INPUT");
    assert!(
        matches!(&error, Error::InvalidInput { field, .. } if field == "timerId"),
        "{error:?}"
    );
    expect_code(store.schedule_timer(&long, "t", 1), "INVALID_INPUT");
    expect_code(store.schedule_timer("wf", &long, 1), "INVALID_INPUT");
    assert!(store
        .list_timers(&PageRequest::default())
        .unwrap()
        .items
        .is_empty());
    // An id at the limit is fine.
    let at_limit = "y".repeat(MAX_ID_BYTES);
    store.schedule_timer(&at_limit, "t", 1).unwrap();
    expect_code(store.cancel_timer("", "t"), "INVALID_INPUT");
    expect_code(store.cancel_timer(&at_limit, ""), "INVALID_INPUT");
    expect_code(store.cancel_timer(&long, "t"), "INVALID_INPUT");
    assert_eq!(
        store.list_timers(&PageRequest::default()).unwrap().items,
        [timer(&at_limit, "t", 1)]
    );
}

fn timers_survive_reopen(backend: &dyn Backend) {
    let location = backend.fresh();
    let store = location.open();
    store.schedule_timer("wf", "a", 10).unwrap();
    store.schedule_timer("wf", "b", 20).unwrap();
    store.schedule_timer("wf", "a", 30).unwrap();
    after_reopen(location.as_ref(), store, |store| {
        assert_eq!(
            store.list_timers(&PageRequest::default()).unwrap().items,
            [timer("wf", "b", 20), timer("wf", "a", 30)]
        );
        assert_eq!(
            store.due_timers(25, &PageRequest::default()).unwrap().items,
            [timer("wf", "b", 20)]
        );
        assert!(store.cancel_timer("wf", "b").unwrap());
        store.schedule_timer("wf", "c", 5).unwrap();
        assert_eq!(
            store.due_timers(25, &PageRequest::default()).unwrap().items,
            [timer("wf", "c", 5)]
        );
    });
}
