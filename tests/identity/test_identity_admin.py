"""The identity app in the admin."""


def test_the_admin_names_provider_identities_in_the_plural(admin_client, db):
    assert "Provider identities" in admin_client.get("/admin/").text
    page = admin_client.get("/admin/identity/provideridentity/").text
    assert "provider identities" in page.lower() and "identitys" not in page.lower()
