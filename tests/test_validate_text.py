"""Lexical helpers: negation per clause, stemming, quantities."""

from __future__ import annotations

import re

import pytest

from haytham.validate.negation import affirmed_clauses, affirmed_matches, affirmed_terms
from haytham.validate.quantities import extract, same_quantity
from haytham.validate.text import markdown_segments, normalize, sentences, stem, terms

REALTIME = re.compile(r"\brealtime\b")


@pytest.mark.parametrize(
    "text",
    [
        "Real-time is not needed for this MVP.",
        "No real-time updates; users refresh.",
        "realtime: false",
        "We use polling instead of real-time sync.",
        "Real-time collaboration is out of scope.",
        "The MVP is non-real-time.",
    ],
)
def test_negated_realtime_is_not_affirmed(text: str) -> None:
    assert affirmed_matches(text, REALTIME) == []


@pytest.mark.parametrize(
    "text",
    [
        "We recommend Supabase for its real-time subscriptions.",
        "Supabase for real-time subscriptions, not for auth.",
        "Participants see the timer in real time.",
    ],
)
def test_affirmed_realtime(text: str) -> None:
    assert affirmed_matches(text, REALTIME)


def test_normalize_phrases() -> None:
    assert "realtime" in normalize("Real-time")
    assert "signup" in normalize("Sign-up page")
    assert "inviteonly" in normalize("invite-only")


def test_stem_is_consistent() -> None:
    assert stem("givers") == stem("giver")
    assert stem("logged") == stem("log")
    assert stem("seven") == "7"


PAYMENT = re.compile(r"\bpayment\b")
SIGNUP = re.compile(r"\b(?:signup|sign themselves up|enrol themselves)\b")


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("No price, fee or payment step appears in any call.", PAYMENT),  # a negated list
        ("No price, fee and payment are shown.", PAYMENT),
        ("There is no page on which anyone could sign themselves up.", SIGNUP),  # relative
        ("There is no form through which anyone can enrol themselves.", SIGNUP),
        ("There is no field anywhere for a price, a payment or a fee.", PAYMENT),  # list rest
        ("It never has to sign up, make a payment or give an email.", PAYMENT),  # predicates
        ("A payment through the site is impossible.", PAYMENT),  # a cue after the match
    ],
)
def test_negation_reaches_across_a_list_or_a_restrictive_relative(
    text: str, pattern: re.Pattern[str]
) -> None:
    assert affirmed_matches(text, pattern) == []
    assert not affirmed_clauses(text) or all(not pattern.search(c) for c in affirmed_clauses(text))


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("Stripe handles payment, fee or refund.", PAYMENT),  # no negation to carry
        ("No login, the payment page asks for a card.", PAYMENT),  # not a list going on
        ("Without login, members or guests make a payment by card.", PAYMENT),  # adverbial
        ("Members need no account, which makes signup instant.", SIGNUP),  # non-restrictive
        ("There is no app for members, a payment or a fee is taken.", PAYMENT),  # a verb
        ("Kilos are swapped for kilos, a payment or a fee.", PAYMENT),  # nothing negated
        ("Members never queue, they make a payment or leave.", PAYMENT),  # its own subject
        ("Without login, members make a payment or leave.", PAYMENT),  # no verb negated
    ],
)
def test_negation_stays_in_its_clause_otherwise(text: str, pattern: re.Pattern[str]) -> None:
    assert affirmed_matches(text, pattern)


def test_affirmed_terms_drop_negated_clause() -> None:
    terms = affirmed_terms("Patients join live sessions; no public registration.")
    assert "live" in terms and "public" not in terms


def test_markdown_out_of_scope_sections_are_excluded() -> None:
    segs = markdown_segments("## In scope\n- Live video circles\n\n## Out of scope\n- Group chat\n")
    assert [(s.text, s.excluded) for s in segs] == [
        ("Live video circles", False),
        ("Group chat", True),
    ]


def test_hard_wrapped_lines_are_one_sentence() -> None:
    idea = "Neighbours within\nabout 2 km pre-order by Thursday.\nPickup only -\nno delivery."
    assert sentences(idea) == [
        "Neighbours within about 2 km pre-order by Thursday.",
        "Pickup only - no delivery.",
    ]
    assert sentences("- Weekly menu\n- Pickup codes\nSaturday pickup") == [
        "Weekly menu",
        "Pickup codes",
        "Saturday pickup",
    ]
    segs = markdown_segments("## Out of scope\ndelivery and\ncouriers\n## In scope\nmenus")
    assert [(s.text, s.excluded) for s in segs] == [
        ("delivery and couriers", True),
        ("menus", False),
    ]


def test_quantities_parse_and_compare() -> None:
    (a,) = extract("The digital mental health market is worth $23.6 billion in 2023.")
    (b,) = extract("The digital mental health market is about $4.3B in 2023.")
    assert a.value == pytest.approx(23.6e9) and b.value == pytest.approx(4.3e9)
    assert same_quantity(a, b)
    (tam,) = extract("TAM: global market of $12B")
    (sam,) = extract("SAM: US market of $4.3B")
    assert not same_quantity(tam, sam)
    (p,) = extract("Zoom Pro costs $13.33 per month")
    assert p.period == "month" and not same_quantity(p, a)
    assert extract("Founded in 2019") == []


def test_memoised_helpers_hand_out_fresh_lists() -> None:
    text = "Cooks publish a weekly menu. Buyers pre-order by Thursday."
    first = sentences(text)
    first.append("tampered")
    assert sentences(text) == ["Cooks publish a weekly menu.", "Buyers pre-order by Thursday."]
    t = terms(text)
    t.clear()
    assert terms(text) == ["cook", "publish", "weekly", "menu", "buyer", "pre", "order", "thursday"]
