"""The ontology: what each predicate means and how people ask for it (pure).

A workspace's ontology names, for every predicate its claims use, a label ("runs on"),
a description, the words people use for it ("host", "server", "cluster"), the
questions that ask for it ("where does X run"), the type of its object, and whether it
is functional (one value at a time). Query understanding reads it to tell which
relation a question asks for; a workspace admin edits it (audited); a knowledge
snapshot pins its version. The defaults below cover the built-in predicates; a
workspace's own rows override them predicate by predicate.

Question forms use `X` for the entity the question is about.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from curation.domain.names import DEFAULT_FUNCTIONAL_PREDICATES
from curation.domain.records import PREDICATE_PATTERN
from kernel.names import name_refusal

MAX_WORDS = 64  # words, and question forms, per predicate
MAX_TEXT = 200  # characters of a label, a word or a question form
ENTITY_SLOT = "X"
_SLOT = re.compile(rf"\b{ENTITY_SLOT}\b")


@dataclass(frozen=True)
class PredicateSense:
    """One predicate as people speak of it."""

    name: str
    label: str
    description: str = ""
    words: tuple[str, ...] = ()
    questions: tuple[str, ...] = ()
    object_type: str = ""
    functional: bool = False

    def __post_init__(self) -> None:
        if reason := sense_refusal(self):
            raise ValueError(reason)


@dataclass(frozen=True)
class Ontology:
    """A workspace's predicates by name, at a version (0: the defaults, never edited)."""

    senses: Mapping[str, PredicateSense] = field(default_factory=dict)
    version: int = 0

    def get(self, name: str) -> PredicateSense | None:
        return self.senses.get(name)

    @property
    def functional(self) -> frozenset[str]:
        return frozenset(name for name, sense in self.senses.items() if sense.functional)

    def overridden(self, own: Iterable[PredicateSense], *, version: int) -> Ontology:
        """These senses, with a workspace's own rows taking the place of the same names."""
        merged = dict(self.senses)
        merged.update({sense.name: sense for sense in own})
        return replace(self, senses=merged, version=version)


def sense_refusal(sense: PredicateSense) -> str:
    """Why a predicate's sense cannot be stored ("" when it can), naming the field."""
    if not PREDICATE_PATTERN.match(sense.name):
        return f"name {sense.name!r} must be UPPER_SNAKE_CASE, like RUNS_ON"
    if not sense.label.strip() or len(sense.label) > MAX_TEXT:
        return f"label must be 1 to {MAX_TEXT} characters"
    if refusal := name_refusal(sense.label, field="label"):
        return refusal
    for key in ("words", "questions"):
        values = getattr(sense, key)
        if len(values) > MAX_WORDS:
            return f"{key} holds at most {MAX_WORDS} entries"
        if any(not value.strip() or len(value) > MAX_TEXT for value in values):
            return f"every entry of {key} must be 1 to {MAX_TEXT} characters"
    if any(not _SLOT.search(question) for question in sense.questions):
        return f'every question form must name the entity as {ENTITY_SLOT} ("where does X run")'
    return ""


def _sense(
    name: str, label: str, words: str, questions: str, object_type: str = "", description: str = ""
) -> PredicateSense:
    return PredicateSense(
        name=name,
        label=label,
        description=description,
        words=tuple(word.strip() for word in words.split(",") if word.strip()),
        questions=tuple(q.strip() for q in questions.split("|") if q.strip()),
        object_type=object_type,
        functional=name in DEFAULT_FUNCTIONAL_PREDICATES,
    )


DEFAULT_SENSES: tuple[PredicateSense, ...] = (
    _sense("RUNS_ON", "runs on",
           "run, runs, running, host, hosts, hosted, server, servers, machine, node, nodes, "
           "cluster, vm, instance, box, platform, hardware, compute, pod, kubernetes, k8s, "
           "hosted on, runs on, sits on",
           "where does X run|what does X run on|which host runs X|which cluster is X on|"
           "what server is X on|what machine hosts X|where is X running",
           "host", "the host, cluster or machine a service runs on"),
    _sense("OWNED_BY", "is owned by",
           "owner, owners, own, owns, owned, ownership, team, responsible, accountable, owning, "
           "whose",
           "who owns X|which team owns X|who is responsible for X|whose is X|"
           "who is the owner of X",
           "team", "the team or person accountable for a thing"),
    _sense("MAINTAINED_BY", "is maintained by",
           "maintainer, maintainers, maintain, maintains, maintained, looks after",
           "who maintains X|who looks after X", "team"),
    _sense("DEPLOYED_TO", "is deployed to",
           "deploy, deployed, deployment, environment, environments, env, stage, production, prod, "
           "staging, tier, sandbox",
           "where is X deployed|which environment is X in|what environment does X use",
           "environment", "the environment a service is deployed to"),
    _sense("DEPENDS_ON", "depends on",
           "depend, depends, dependency, dependencies, deps, require, requires, need, needs, "
           "use, uses, call, calls, rely, system, systems, component, components, talks to, "
           "upstream, upstreams, relies, reliant, dependent, prerequisite, prerequisites, backend, "
           "backends, connects to",
           "what does X depend on|what does X need|which services does X call|"
           "what are the dependencies of X|what does X rely on",
           "service", "another thing this one needs in order to work"),
    _sense("HOSTED_IN", "is hosted in",
           "region, regions, location, located, datacenter, data centre, data center, zone, site, "
           "geography, geographic, geographically, country, cloud region",
           "which region is X in|where is X hosted|what region hosts X|where is X located",
           "location", "the region, site or data centre a thing lives in"),
    _sense("HAS_VERSION", "has version",
           "version, versions, ver, release, releases, released, build, tag, revision, semver",
           "which version is X|what version of X is deployed|what is the version of X|"
           "what release is X on",
           "version", "the version currently released"),
    _sense("HAS_STATUS", "has status",
           "status, state, lifecycle, health, operational",
           "what is the status of X|is X live|what state is X in", "status"),
    _sense("WRITTEN_IN", "is written in",
           "language, languages, lang, written, programming, programmed, code, coded, codebase, "
           "implemented, "
           "stack, framework, runtime, built with, built in, tech stack, technology",
           "what language is X written in|which language is X in|what is X written in|"
           "what is X implemented in",
           "language", "the programming language a service is written in"),
    _sense("PART_OF", "is part of",
           "part, component, belongs, member, within, subsystem",
           "what is X part of|which system does X belong to", "system"),
    _sense("ASSIGNED_TO", "is assigned to",
           "assignee, assigned, working on", "who is X assigned to|who works on X", "person"),
    _sense("REPORTED_BY", "was reported by",
           "reporter, reported, raised, filed, opened", "who reported X|who raised X", "person"),
    _sense("HAS_TYPE", "is of type", "type, kind, class, category", "what kind of thing is X"),
    _sense("AFFECTS", "affects", "affect, affects, impact, impacts, component",
           "what does X affect|what does X impact"),
    _sense("BLOCKS", "blocks", "block, blocks, blocked, blocking", "what does X block"),
    _sense("RELATES_TO", "relates to", "relate, related, relates", "what is X related to"),
)  # fmt: skip

DEFAULT_ONTOLOGY = Ontology(senses={sense.name: sense for sense in DEFAULT_SENSES}, version=0)


def phrase(name: str, ontology: Ontology = DEFAULT_ONTOLOGY) -> str:
    """How a fact text says the predicate ("runs on"); a name it does not know, spelled."""
    sense = ontology.get(name)
    return sense.label if sense is not None else name.lower().replace("_", " ")
