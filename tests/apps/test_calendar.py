"""The calendar app: scheduling, rooms, invitations and RSVPs; every precondition's refusal; reads."""

from __future__ import annotations

import pytest

from envtrain.core import ErrorKind

from .kit import app_fixtures, call, refused, rows

ME, RAJ, ANA = "me@acme.test", "raj@acme.test", "ana@acme.test"
NOW = "2026-04-01T09:00:00Z"


def event(id, calendar_id, title, start, end, *, room=None, organizer=ME, status="confirmed"):
    return {"id": id, "calendar_id": calendar_id, "title": title, "start_time": start, "end_time": end, "room": room,
            "organizer": organizer, "status": status, "created_at": "2026-03-01T09:00:00Z", "updated_at": "2026-03-01T09:00:00Z"}


ROWS = {
    "calendar.calendars": [
        {"id": 1, "name": "Team", "owner": ME},
        {"id": 2, "name": "Engineering", "owner": RAJ},
    ],
    "calendar.editors": [{"id": 1, "calendar_id": 1, "email": ME}, {"id": 2, "calendar_id": 1, "email": ANA},
                         {"id": 3, "calendar_id": 2, "email": RAJ}],
    "calendar.rooms": [
        {"id": "atlas", "name": "Atlas", "capacity": 10, "floor": "3", "has_video": True},
        {"id": "nook", "name": "Nook", "capacity": 2, "floor": "2", "has_video": False},
        {"id": "orion", "name": "Orion", "capacity": 6, "floor": "3", "has_video": True},
    ],
    "calendar.events": [
        event(1, 2, "Design sync", "2026-04-02T10:00:00Z", "2026-04-02T11:00:00Z", room="atlas", organizer=RAJ),
        event(2, 1, "Planning", "2026-04-02T14:00:00Z", "2026-04-02T15:00:00Z", room="nook"),
        event(3, 1, "Old sync", "2026-04-03T10:00:00Z", "2026-04-03T11:00:00Z", room="atlas", status="cancelled"),
        event(4, 1, "Retro", "2026-04-02T10:30:00Z", "2026-04-02T11:30:00Z"),
    ],
    "calendar.attendees": [
        {"id": 1, "event_id": 1, "email": RAJ, "response": "accepted", "responded_at": "2026-03-01T09:00:00Z"},
        {"id": 2, "event_id": 1, "email": ME, "response": "needs_action", "responded_at": None},
        {"id": 3, "event_id": 2, "email": ME, "response": "accepted", "responded_at": "2026-03-01T09:00:00Z"},
        {"id": 4, "event_id": 2, "email": ANA, "response": "accepted", "responded_at": "2026-03-01T09:00:00Z"},
        {"id": 5, "event_id": 4, "email": ME, "response": "accepted", "responded_at": "2026-03-01T09:00:00Z"},
    ],
}


runtime, session = app_fixtures("calendar", ROWS, persona=ME, base_time=NOW)


def test_schedule_event_makes_me_organizer_and_attendee(session):
    r = call(session, "schedule_event", calendar_id=1, title="Review", start="2026-04-06T09:00:00Z", end="2026-04-06T10:00:00Z")
    assert r.ok, r.message
    assert r.output == {"created": {
        "id": 5, "calendar_id": 1, "title": "Review", "description": None, "start_time": "2026-04-06T09:00:00Z",
        "end_time": "2026-04-06T10:00:00Z", "room": None, "organizer": ME, "status": "confirmed", "created_at": NOW, "updated_at": NOW}}
    assert rows(session, "calendar.attendees", event_id=5) == [
        {"id": 6, "event_id": 5, "email": ME, "response": "accepted", "responded_at": NOW}]


def test_book_invite_reschedule_respond_cancel(session):
    assert call(session, "book_meeting_room", event_id=4, room="orion").ok
    assert call(session, "invite_attendee", event_id=4, email=ANA).ok
    assert rows(session, "calendar.attendees", event_id=4, email=ANA)[0]["response"] == "needs_action"
    assert call(session, "reschedule_event", event_id=4, start="2026-04-02T16:00:00Z", end="2026-04-02T17:00:00Z").ok
    assert [(e["room"], e["start_time"], e["end_time"]) for e in rows(session, "calendar.events", id=4)] == [
        ("orion", "2026-04-02T16:00:00Z", "2026-04-02T17:00:00Z")]
    assert call(session, "respond_to_invite", event_id=1, response="declined").ok
    assert rows(session, "calendar.attendees", event_id=1, email=ME)[0]["response"] == "declined"
    assert call(session, "cancel_event", event_id=4).ok
    assert rows(session, "calendar.events", id=4)[0]["status"] == "cancelled"


@pytest.mark.parametrize(("tool", "args", "kind", "detail"), [
    ("schedule_event", {"calendar_id": 9, "title": "x", "start": "2026-04-06T09:00:00Z", "end": "2026-04-06T10:00:00Z"},
     ErrorKind.NOT_FOUND, "No calendar 9."),
    ("schedule_event", {"calendar_id": 2, "title": "x", "start": "2026-04-06T09:00:00Z", "end": "2026-04-06T10:00:00Z"},
     ErrorKind.PERMISSION_DENIED, "You cannot add events to calendar 2"),
    ("schedule_event", {"calendar_id": 1, "title": "x", "start": "2026-04-06T10:00:00Z", "end": "2026-04-06T09:00:00Z"},
     ErrorKind.CONSTRAINT_VIOLATION, "An event must end after it starts."),
    ("schedule_event", {"calendar_id": 1, "title": "x", "start": "2026-04-06 09:00", "end": "2026-04-06T10:00:00Z"},
     ErrorKind.CONSTRAINT_VIOLATION, "start_time must be a time (YYYY-MM-DDTHH:MM:SSZ)"),
    ("reschedule_event", {"event_id": 99, "start": "2026-04-06T09:00:00Z", "end": "2026-04-06T10:00:00Z"}, ErrorKind.NOT_FOUND, "No event 99."),
    ("reschedule_event", {"event_id": 1, "start": "2026-04-06T09:00:00Z", "end": "2026-04-06T10:00:00Z"},
     ErrorKind.PERMISSION_DENIED, "Only the organizer of event 1 can reschedule it."),
    ("reschedule_event", {"event_id": 3, "start": "2026-04-06T09:00:00Z", "end": "2026-04-06T10:00:00Z"},
     ErrorKind.INVALID_TRANSITION, "Event 3 is cancelled"),
    ("reschedule_event", {"event_id": 2, "start": "2026-04-02T15:00:00Z", "end": "2026-04-02T14:30:00Z"},
     ErrorKind.CONSTRAINT_VIOLATION, "An event must end after it starts."),
    ("cancel_event", {"event_id": 99}, ErrorKind.NOT_FOUND, "No event 99."),
    ("list_calendar_editors", {"calendar_id": 9}, ErrorKind.NOT_FOUND, "No calendar 9."),
    ("cancel_event", {"event_id": 1}, ErrorKind.PERMISSION_DENIED, "Only the organizer of event 1 can cancel it."),
    ("cancel_event", {"event_id": 3}, ErrorKind.INVALID_TRANSITION, "Event 3 is already cancelled."),
    ("invite_attendee", {"event_id": 99, "email": ANA}, ErrorKind.NOT_FOUND, "No event 99."),
    ("invite_attendee", {"event_id": 1, "email": ANA}, ErrorKind.PERMISSION_DENIED, "Only the organizer of event 1"),
    ("invite_attendee", {"event_id": 3, "email": ANA}, ErrorKind.INVALID_TRANSITION, "Event 3 is cancelled."),
    ("invite_attendee", {"event_id": 4, "email": ME}, ErrorKind.INVALID_TRANSITION, f"{ME} is already invited to event 4."),
    ("invite_attendee", {"event_id": 2, "email": RAJ}, ErrorKind.CONSTRAINT_VIOLATION, "The room booked for event 2 is full"),
    ("respond_to_invite", {"event_id": 99, "response": "accepted"}, ErrorKind.NOT_FOUND, "No event 99."),
    ("respond_to_invite", {"event_id": 3, "response": "accepted"}, ErrorKind.NOT_FOUND, "You are not invited to event 3."),
    ("book_meeting_room", {"event_id": 99, "room": "atlas"}, ErrorKind.NOT_FOUND, "No event 99."),
    ("book_meeting_room", {"event_id": 4, "room": "zeta"}, ErrorKind.NOT_FOUND, "No room zeta"),
    ("book_meeting_room", {"event_id": 1, "room": "orion"}, ErrorKind.PERMISSION_DENIED, "Only the organizer of event 1 can book"),
    ("book_meeting_room", {"event_id": 3, "room": "orion"}, ErrorKind.INVALID_TRANSITION, "Event 3 is cancelled."),
    ("book_meeting_room", {"event_id": 4, "room": "atlas"}, ErrorKind.CONSTRAINT_VIOLATION, "Room atlas is already booked during event 4."),
])
def test_refusals(session, tool, args, kind, detail):
    refused(session, tool, kind, detail, **args)


def test_refusals_that_need_a_prepared_world(session):
    # a room too small for the attendees; a rescheduled event whose room is taken at the new time
    assert call(session, "invite_attendee", event_id=4, email=ANA).ok
    assert call(session, "invite_attendee", event_id=4, email=RAJ).ok
    r = call(session, "book_meeting_room", event_id=4, room="nook")
    assert (r.error, r.message) == (ErrorKind.CONSTRAINT_VIOLATION, "Room nook seats fewer people than are attending event 4.")
    r = call(session, "reschedule_event", event_id=2, start="2026-04-02T10:00:00Z", end="2026-04-02T11:00:00Z")
    assert r.ok  # nook is free then
    assert call(session, "schedule_event", calendar_id=1, title="Busy", start="2026-04-02T16:00:00Z", end="2026-04-02T17:00:00Z").ok
    assert call(session, "book_meeting_room", event_id=5, room="nook").ok
    r = call(session, "reschedule_event", event_id=2, start="2026-04-02T16:30:00Z", end="2026-04-02T17:30:00Z")
    assert (r.error, r.message) == (ErrorKind.CONSTRAINT_VIOLATION,
                                    "The room of event 2 is already booked for part of 2026-04-02T16:30:00Z to 2026-04-02T17:30:00Z.")
    assert call(session, "cancel_event", event_id=3).error is ErrorKind.INVALID_TRANSITION
    r = call(session, "respond_to_invite", event_id=3, response="accepted")
    assert r.error is ErrorKind.NOT_FOUND


def test_respond_to_a_cancelled_event_is_refused(session):
    assert call(session, "cancel_event", event_id=4).ok
    r = call(session, "respond_to_invite", event_id=4, response="declined")
    assert (r.error, r.message) == (ErrorKind.INVALID_TRANSITION, "Event 4 is cancelled; there is nothing to respond to.")


def test_reads(session):
    day = call(session, "list_calendar_events", range_start="2026-04-02T00:00:00Z", range_end="2026-04-03T00:00:00Z").output
    assert [(e["id"], e["title"]) for e in day["items"]] == [(1, "Design sync"), (4, "Retro"), (2, "Planning")]
    mine = call(session, "list_calendar_events", range_start="2026-04-01T00:00:00Z", range_end="2026-04-30T00:00:00Z",
                 calendar_id=1, attendee=ANA).output
    assert [e["id"] for e in mine["items"]] == [2]
    free = call(session, "find_free_rooms", start="2026-04-02T10:30:00Z", end="2026-04-02T14:30:00Z").output
    assert [r["id"] for r in free["items"]] == ["orion"]  # atlas: design sync; nook: planning
    free = call(session, "find_free_rooms", start="2026-04-03T10:00:00Z", end="2026-04-03T11:00:00Z", min_capacity=5).output
    assert [r["id"] for r in free["items"]] == ["orion", "atlas"]  # the cancelled event holds no room; smallest first
    assert call(session, "list_event_attendees", event_id=2).output["items"] == [
        {"email": ME, "response": "accepted", "responded_at": "2026-03-01T09:00:00Z"},
        {"email": ANA, "response": "accepted", "responded_at": "2026-03-01T09:00:00Z"}]
    assert call(session, "get_calendar_event", event_id=1).output["organizer"] == RAJ
    assert [r["id"] for r in call(session, "list_meeting_rooms", min_capacity=6).output["items"]] == ["atlas", "orion"]
    assert [c["name"] for c in call(session, "list_calendars").output["items"]] == ["Engineering", "Team"]
    assert call(session, "list_calendar_editors", calendar_id=1).output["items"] == [{"email": ANA}, {"email": ME}]
