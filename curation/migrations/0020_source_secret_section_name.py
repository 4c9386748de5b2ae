"""A source's secret variable takes the section form: VERA_SOURCE_SECRET__<NAME>.

Every VERA_ variable is now `VERA_<AREA>__<KEY>`; a source's `token_env` written under
the old default prefix (`VERA_SOURCE_SECRET_<NAME>`) is renamed to match. The settings
carry an old variable's value over to its new name for a release (see
`vera.settings.env.adopt_renamed`), so a source keeps its secret across the upgrade.
RLS is forced even on the owner, so it is lifted for this step inside the migration's
transaction.
"""

from django.db import migrations

FORWARD = r"""
ALTER TABLE curation_source NO FORCE ROW LEVEL SECURITY;
UPDATE curation_source
   SET token_env = 'VERA_SOURCE_SECRET__' || substr(token_env, 20)
 WHERE token_env LIKE 'VERA\_SOURCE\_SECRET\_%'
   AND token_env NOT LIKE 'VERA\_SOURCE\_SECRET\_\_%'
   AND length(token_env) < 100;
ALTER TABLE curation_source FORCE ROW LEVEL SECURITY;
"""


class Migration(migrations.Migration):
    dependencies = [("curation", "0019_reprocessing")]

    operations = [migrations.RunSQL(FORWARD, migrations.RunSQL.noop)]
