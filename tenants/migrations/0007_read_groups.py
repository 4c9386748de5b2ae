"""`vera_read_groups()`: the groups whose published knowledge the principal reads (the
scopes above its own), from the transaction-local setting `vera.read_groups`."""

from django.db import migrations

from tenants import rls


class Migration(migrations.Migration):
    dependencies = [("tenants", "0006_membership_via_idp")]

    operations = [rls.install_read_function()]
