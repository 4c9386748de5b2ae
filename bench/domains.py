"""Generated knowledge of other kinds than the ops estate, for `bench.questions` (seeded).

A domain is a CMDB-style export (JSON records, one per item) whose columns a source maps
onto the workspace's own predicates, the questions people ask of it, and the ontology
entries an admin would write for those predicates (a label, a few words, two questions
each). Two are here; the ops estate is `bench/estate.py`:

- `people`: an HR directory. Each person has a manager (another person), a team, an
  office, a job title and a start date. Names are as people have them: accents,
  apostrophes, particles ("van der Berg"), shared first names and shared surnames.
- `catalogue`: a product catalogue. Each product has a brand that makes it, a supplier,
  a category, a warehouse that stocks it, a price, a launch date and 0-2 products it is
  compatible with.

Each relation is asked in two disjoint phrasing sets written before any tuning against
them ("default", "heldout"); `{s}` is the item. A relation whose name starts with `~`
is asked inversely: `{s}` is then the object ("who reports to {s}") and any subject
with that object answers.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

FIRST = (
    "Noah", "Mai", "Ana", "Ben", "Chen", "Zoë", "José", "Siân", "Åsa", "Liam", "Olivia",
    "Amara", "Kenji", "Fatima", "Lucas", "Ingrid", "Ravi", "Elena", "Tomás", "Aisha",
    "Hugo", "Mei", "Omar", "Priya", "Jonas", "Léa", "Kwame", "Sofia", "Daniel", "Yuki",
    "Marta", "Ibrahim", "Clara", "Mateo", "Nadia", "Erik", "Grace", "Pavel", "Leila",
    "Samuel", "Hana", "Diego", "Freya", "Arjun", "Chloé", "Tariq", "Nora", "Felix",
)  # fmt: skip
LAST = (
    "Dubois", "Tran", "Silva", "Okafor", "Chen", "O'Brien", "van der Berg", "Müller",
    "Nguyen", "García", "Kowalski", "Haddad", "Johansson", "Rossi", "Sato", "Mensah",
    "Patel", "Novak", "Fischer", "Costa", "Lindqvist", "Moreau", "Kim", "Ivanova",
    "da Silva", "MacLeod", "Al-Sayed", "Schmidt", "Yilmaz", "Andersen", "Ferreira",
    "Park", "Bianchi", "Ó Súilleabháin", "Kaur", "Nakamura", "Dupont", "Mwangi", "Horvat",
    "Lefebvre", "Jansen", "Popescu", "Reyes", "Larsen", "Abebe", "Wójcik", "Duarte",
)  # fmt: skip
TEAMS = (
    "Payments", "Ledger", "Growth", "Design Systems", "Data Platform", "Mobile",
    "Search Quality", "Security", "Customer Success", "Brand", "Recruiting", "Finance Ops",
    "Developer Experience", "Risk", "Partnerships", "Legal",
)  # fmt: skip
OFFICES = (
    "Lyon", "Hanoi", "Paris", "Berlin", "Nairobi", "São Paulo", "Toronto", "Singapore",
    "Dublin", "Kraków", "Austin", "Melbourne",
)  # fmt: skip
TITLES = (
    "Software Engineer", "Senior Software Engineer", "Staff Engineer", "Product Manager",
    "Product Designer", "Data Scientist", "Engineering Manager", "Recruiter",
    "Account Executive", "Financial Analyst", "Security Engineer", "Technical Writer",
    "Counsel", "Support Specialist",
)  # fmt: skip

BRANDS = (
    "Aurora", "Nimbus", "Helix", "Quartz Labs", "Brightline", "Kestrel", "Vantage",
    "Orchard & Co", "Tidewater", "Polaris", "Emberly", "Zephyr",
)  # fmt: skip
SUPPLIERS = (
    "Northwind Traders", "Eastgate Supply", "Meridian Wholesale", "Sunrise Distribution",
    "Harbor Logistics", "Copperfield Imports", "Atlas Trading", "Bluewater Goods",
)  # fmt: skip
CATEGORIES = (
    "Kitchen Appliances", "Laptops", "Headphones", "Garden Tools", "Office Chairs",
    "Cameras", "Smart Home", "Cookware", "Bicycles", "Monitors",
)  # fmt: skip
WAREHOUSES = ("Rotterdam DC", "Leipzig Hub", "Lyon North", "Madrid Sur", "Gdańsk Port",
              "Milan East")  # fmt: skip
PRODUCT_WORDS = {
    "Kitchen Appliances": ("Blender", "Toaster", "Kettle", "Mixer"),
    "Laptops": ("Laptop", "Notebook", "Ultrabook"),
    "Headphones": ("Headphones", "Earbuds", "Headset"),
    "Garden Tools": ("Hedge Trimmer", "Leaf Blower", "Pruner"),
    "Office Chairs": ("Office Chair", "Task Chair", "Stool"),
    "Cameras": ("Camera", "Action Cam", "Webcam"),
    "Smart Home": ("Thermostat", "Doorbell", "Smart Plug"),
    "Cookware": ("Skillet", "Dutch Oven", "Saucepan"),
    "Bicycles": ("Road Bike", "E-Bike", "Gravel Bike"),
    "Monitors": ("Monitor", "Display"),
}  # fmt: skip
MODELS = ("X200", "Pro 15", "Mini", "Air", "S3", "Max", "Lite", "One", "Duo", "Z9", "Plus",
          "Go", "Ultra", "Classic", "Edge")  # fmt: skip


@dataclass(frozen=True)
class Item:
    """One record: its name and, per predicate, the values it has."""

    name: str
    values: Mapping[str, tuple[str, ...]]

    def objects(self, predicate: str) -> tuple[str, ...]:
        return self.values.get(predicate, ())


@dataclass(frozen=True)
class Domain:
    """A generated dataset, how a source maps it, how people ask about it."""

    name: str
    items: tuple[Item, ...]
    records: tuple[dict[str, object], ...]
    mapping: Mapping[str, str]  # column -> predicate, as the source is configured
    phrasings: Mapping[str, Mapping[str, tuple[str, ...]]]  # set -> relation -> forms
    ontology: tuple[dict[str, object], ...]  # the admin's entries (PredicateSense fields)
    seed: int
    id_field: str = "id"  # the column holding each record's key
    extra: Mapping[str, object] = field(default_factory=dict)

    def write(self, folder: Path) -> Path:
        """The export as `folder/<name>.json` (the folder made fresh); its path."""
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        path = folder / f"{self.name}.json"
        path.write_text(json.dumps(list(self.records), indent=1, ensure_ascii=False), "utf-8")
        return path

    def subjects_of(self, predicate: str, obj: str) -> tuple[str, ...]:
        """The items whose `predicate` has `obj` among its values (an inverse answer)."""
        return tuple(item.name for item in self.items if obj in item.objects(predicate))


PEOPLE_MAPPING = {
    "manager": "REPORTS_TO", "team": "MEMBER_OF", "office": "BASED_IN",
    "title": "HAS_TITLE", "start_date": "HAS_START_DATE",
}  # fmt: skip
PEOPLE_PHRASINGS = {
    "default": {
        "REPORTS_TO": ("who does {s} report to", "who is {s}'s manager", "{s} manager",
                       "who manages {s}?"),
        "MEMBER_OF": ("what team is {s} on", "{s}'s team", "which team does {s} work in",
                      "{s} team?"),
        "BASED_IN": ("where is {s} based", "which office is {s} in", "{s} office",
                     "where does {s} work from?"),
        "HAS_TITLE": ("what is {s}'s title", "what is {s}'s job title", "{s} role",
                      "what does {s} do?"),
        "HAS_START_DATE": ("when did {s} start", "when did {s} join", "{s} start date",
                           "when was {s} hired?"),
        "~REPORTS_TO": ("who reports to {s}", "who are {s}'s direct reports",
                        "who does {s} manage", "{s}'s reports"),
    },
    "heldout": {
        "REPORTS_TO": ("who is the boss of {s}", "{s} reports to whom?",
                       "name {s}'s line manager", "who is {s}'s supervisor"),
        "MEMBER_OF": ("which group is {s} part of", "team of {s}", "{s} belongs to which team",
                      "what team does {s} belong to?"),
        "BASED_IN": ("what city is {s} in", "{s} location", "in which office does {s} sit",
                     "where is {s} located?"),
        "HAS_TITLE": ("{s}'s position", "what position does {s} hold", "job title of {s}",
                      "what is {s}'s role?"),
        "HAS_START_DATE": ("{s} joined when?", "what was {s}'s first day",
                           "since when has {s} been here", "hire date of {s}"),
        "~REPORTS_TO": ("who works under {s}", "{s}'s team members who report to them",
                        "direct reports of {s}", "who is managed by {s}?"),
    },
}  # fmt: skip
PEOPLE_ONTOLOGY = (
    {"name": "REPORTS_TO", "label": "reports to", "object_type": "person", "functional": True,
     "words": ("manager", "reports to", "boss", "manages"),
     "questions": ("who does X report to", "who is X's manager")},
    {"name": "MEMBER_OF", "label": "is a member of", "object_type": "team", "functional": True,
     "words": ("team", "member", "works in"),
     "questions": ("what team is X on", "which team does X belong to")},
    {"name": "BASED_IN", "label": "is based in", "object_type": "office", "functional": True,
     "words": ("office", "based", "city", "location"),
     "questions": ("where is X based", "which office is X in")},
    {"name": "HAS_TITLE", "label": "has title", "object_type": "title", "functional": True,
     "words": ("title", "job title", "role", "position"),
     "questions": ("what is X's title", "what is X's role")},
    {"name": "HAS_START_DATE", "label": "started on", "object_type": "date", "functional": True,
     "words": ("start date", "joined", "hired", "started"),
     "questions": ("when did X join", "when did X start")},
)  # fmt: skip

CATALOGUE_MAPPING = {
    "brand": "MADE_BY", "supplier": "SUPPLIED_BY", "category": "IN_CATEGORY",
    "warehouse": "STOCKED_AT", "price": "HAS_PRICE", "launched": "HAS_LAUNCH_DATE",
    "compatible_with": "COMPATIBLE_WITH",
}  # fmt: skip
CATALOGUE_PHRASINGS = {
    "default": {
        "MADE_BY": ("who makes {s}", "what brand is {s}", "{s} brand", "who manufactures {s}?"),
        "SUPPLIED_BY": ("who supplies {s}", "which supplier do we buy {s} from",
                        "{s} supplier", "who is the vendor for {s}?"),
        "IN_CATEGORY": ("what category is {s} in", "{s} category", "what kind of product is {s}",
                        "which category does {s} belong to?"),
        "STOCKED_AT": ("where is {s} stocked", "which warehouse holds {s}", "{s} warehouse",
                       "where do we keep {s}?"),
        "HAS_PRICE": ("how much does {s} cost", "what is the price of {s}", "{s} price",
                      "how much is {s}?"),
        "HAS_LAUNCH_DATE": ("when was {s} launched", "{s} launch date",
                            "when did {s} come out", "what is the release date of {s}?"),
        "COMPATIBLE_WITH": ("what is {s} compatible with", "{s} compatibility",
                            "what works with {s}", "which products fit {s}?"),
        "~SUPPLIED_BY": ("what does {s} supply", "which products come from {s}",
                         "{s} products", "what do we buy from {s}?"),
    },
    "heldout": {
        "MADE_BY": ("manufacturer of {s}", "which company produces {s}", "{s} is made by whom",
                    "who builds {s}"),
        "SUPPLIED_BY": ("where do we source {s} from", "vendor of {s}", "who distributes {s} to us",
                        "{s} is supplied by which company?"),
        "IN_CATEGORY": ("what type of item is {s}", "product category of {s}",
                        "{s} falls under which category", "what section is {s} listed in?"),
        "STOCKED_AT": ("which distribution centre has {s}", "storage location of {s}",
                       "{s} is kept in which warehouse", "where is {s} held in stock?"),
        "HAS_PRICE": ("what does {s} sell for", "list price of {s}", "{s} costs how much",
                      "what's the retail price of {s}?"),
        "HAS_LAUNCH_DATE": ("when did {s} go on sale", "{s} release date",
                            "what date was {s} introduced", "since when is {s} available?"),
        "COMPATIBLE_WITH": ("which items go with {s}", "{s} works together with what",
                            "accessories compatible with {s}", "what can {s} be used with?"),
        "~SUPPLIED_BY": ("items supplied by {s}", "what products does {s} provide",
                         "list what {s} delivers", "which goods come from {s}"),
    },
}  # fmt: skip
CATALOGUE_ONTOLOGY = (
    {"name": "MADE_BY", "label": "is made by", "object_type": "brand", "functional": True,
     "words": ("brand", "maker", "manufacturer", "makes"),
     "questions": ("who makes X", "what brand is X")},
    {"name": "SUPPLIED_BY", "label": "is supplied by", "object_type": "supplier",
     "functional": True, "words": ("supplier", "vendor", "supplies", "source"),
     "questions": ("who supplies X", "which supplier do we buy X from")},
    {"name": "IN_CATEGORY", "label": "is in category", "object_type": "category",
     "functional": True, "words": ("category", "kind of product", "type of product"),
     "questions": ("what category is X in", "what kind of product is X")},
    {"name": "STOCKED_AT", "label": "is stocked at", "object_type": "warehouse",
     "functional": True, "words": ("warehouse", "stocked", "stock", "kept"),
     "questions": ("where is X stocked", "which warehouse holds X")},
    {"name": "HAS_PRICE", "label": "has price", "object_type": "price", "functional": True,
     "words": ("price", "cost", "costs", "how much"),
     "questions": ("how much does X cost", "what is the price of X")},
    {"name": "HAS_LAUNCH_DATE", "label": "was launched on", "object_type": "date",
     "functional": True, "words": ("launched", "launch date", "release date", "came out"),
     "questions": ("when was X launched", "when did X come out")},
    {"name": "COMPATIBLE_WITH", "label": "is compatible with", "object_type": "product",
     "words": ("compatible", "compatibility", "works with", "fits"),
     "questions": ("what is X compatible with", "what works with X")},
)  # fmt: skip


def _date(rng: random.Random, first: int, last: int) -> str:
    start = dt.date(first, 1, 1).toordinal()
    return dt.date.fromordinal(rng.randint(start, dt.date(last, 12, 31).toordinal())).isoformat()


def people(*, size: int, seed: int) -> Domain:
    """`size` people (at least 20) in a reporting tree: a tenth manage, each reports to one."""
    rng = random.Random(f"{seed}:people")  # noqa: S311 - reproducible test data
    names: list[str] = []
    while len(names) < max(size, 20):
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        if name not in names:
            names.append(name)
    managers = names[: max(3, len(names) // 10)]
    items, records = [], []
    for index, name in enumerate(names):
        boss = () if index == 0 else (rng.choice(managers[: max(1, min(index, len(managers)))]),)
        title = "Engineering Manager" if name in managers[1:] else rng.choice(TITLES)
        values = {
            "REPORTS_TO": boss, "MEMBER_OF": (rng.choice(TEAMS),),
            "BASED_IN": (rng.choice(OFFICES),), "HAS_TITLE": (title,),
            "HAS_START_DATE": (_date(rng, 2012, 2025),),
        }  # fmt: skip
        items.append(Item(name, values))
        records.append({
            "id": f"E{1000 + index}", "name": name, "type": "person",
            "manager": boss[0] if boss else "", "team": values["MEMBER_OF"][0],
            "office": values["BASED_IN"][0], "title": title,
            "start_date": values["HAS_START_DATE"][0],
        })  # fmt: skip
    return Domain(
        name="people", items=tuple(items), records=tuple(records), mapping=PEOPLE_MAPPING,
        phrasings=PEOPLE_PHRASINGS, ontology=PEOPLE_ONTOLOGY, seed=seed,
        extra={"managers": tuple(managers)},
    )  # fmt: skip


def catalogue(*, size: int, seed: int) -> Domain:
    """`size` products (at least 20): brand + model + kind names, unique."""
    rng = random.Random(f"{seed}:catalogue")  # noqa: S311 - reproducible test data
    chosen: list[tuple[str, str]] = []
    seen: set[str] = set()
    while len(chosen) < max(size, 20):
        category = rng.choice(CATEGORIES)
        brand = rng.choice(BRANDS)
        name = f"{brand} {rng.choice(MODELS)} {rng.choice(PRODUCT_WORDS[category])}"
        if name not in seen:
            seen.add(name)
            chosen.append((name, category))
    names = [name for name, _ in chosen]
    items, records = [], []
    for index, (name, category) in enumerate(chosen):
        brand = _brand_of(name)
        others = [other for other in names if other != name]
        compatible = tuple(rng.sample(others, rng.randint(0, 2)))
        price = f"{rng.randint(9, 1999)}.{rng.choice(('00', '49', '99'))} EUR"
        values = {
            "MADE_BY": (brand,), "SUPPLIED_BY": (rng.choice(SUPPLIERS),),
            "IN_CATEGORY": (category,), "STOCKED_AT": (rng.choice(WAREHOUSES),),
            "HAS_PRICE": (price,), "HAS_LAUNCH_DATE": (_date(rng, 2015, 2026),),
            "COMPATIBLE_WITH": compatible,
        }  # fmt: skip
        items.append(Item(name, values))
        records.append({
            "sku": f"SKU-{40000 + index * 7}", "name": name, "type": "product",
            "brand": brand, "supplier": values["SUPPLIED_BY"][0], "category": category,
            "warehouse": values["STOCKED_AT"][0], "price": price,
            "launched": values["HAS_LAUNCH_DATE"][0], "compatible_with": list(compatible),
        })  # fmt: skip
    return Domain(
        name="catalogue", items=tuple(items), records=tuple(records),
        mapping=CATALOGUE_MAPPING, phrasings=CATALOGUE_PHRASINGS,
        ontology=CATALOGUE_ONTOLOGY, seed=seed, id_field="sku",
    )  # fmt: skip


def _brand_of(name: str) -> str:
    return next(brand for brand in BRANDS if name.startswith(f"{brand} "))


GENERATORS = {"people": people, "catalogue": catalogue}
