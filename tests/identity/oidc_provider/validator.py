"""The toolkit's validator with the groups claim and the misbehaviours the knobs file asks for."""

import base64
import json
import os
import time

from jwcrypto import jwk, jwt
from oauth2_provider.oauth2_validators import OAuth2Validator

_other_key = jwk.JWK.generate(kty="RSA", size=2048)


def knobs() -> dict:
    with open(os.environ["PROVIDER_KNOBS"]) as handle:
        return json.load(handle)


class KnobbedValidator(OAuth2Validator):
    """Claims from the knobs file; another audience, an old token or a foreign key when it says so."""

    oidc_claim_scope = None  # every claim, whatever the scopes

    def get_additional_claims(self, request):
        user = knobs()["users"].get(request.user.username, {})
        claims = {
            "preferred_username": user.get("preferred_username", request.user.username),
            "email": user.get("email", f"{request.user.username}@example.org"),
            "groups": user.get("groups", []),
        }
        claims.update(user.get("extra", {}))
        return claims

    # prompt=none (Berth's re-check): the toolkit's authorize view already asked for a signed-in
    # user, and Berth's client skips the consent page, so a silent answer is always possible here.
    def validate_silent_login(self, request):
        return True

    def validate_silent_authorization(self, request):
        return True

    def get_id_token_dictionary(self, token, token_handler, request):
        claims, expiration_time = super().get_id_token_dictionary(token, token_handler, request)
        settings = knobs()
        if settings.get("aud"):
            claims["aud"] = settings["aud"]
        if settings.get("expired"):
            claims["iat"] = int(time.time()) - 7200
            claims["exp"] = int(time.time()) - 3600
        return claims, expiration_time

    def finalize_id_token(self, id_token, token, token_handler, request):
        signed = super().finalize_id_token(id_token, token, token_handler, request)
        if not knobs().get("bad_signature"):
            return signed
        # The same header (the published key's kid) and claims, signed by a key the JWKS does not hold.
        header, claims, _ = signed.split(".")
        forged = jwt.JWT(header=_decode(header), claims=_decode(claims))
        forged.make_signed_token(_other_key)
        return forged.serialize()


def _decode(part: str) -> str:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)).decode()
