import os, sys
import bench.entity_resolution as er
from bench.common import setup_django
setup_django()
import curation.services.entities as ents
ents.SEMANTIC_LINK = float(os.environ["SEM"]); ents.FUZZY_LINK = float(os.environ["FUZ"])
from tenants import rls
from tenants.domain.scopes import ScopeKind
from tenants.selectors import principal_system
from tenants.services.scopes import scope_create
pairs = er.load_pairs()
emb = er._embedder("minilm")
org = scope_create(kind=ScopeKind.ORGANISATION, name="ER Org")
ws = scope_create(kind=ScopeKind.WORKSPACE, name="ER WS", parent_id=org.pk)
with rls.tenant_context(principal_system("bench", group_ids=[ws.group_id])):
    score = er.run(pairs, group=ws.group_id, embedder=emb)
er.report(score, pairs=len(pairs), embedder="minilm sweep", seconds=0)
