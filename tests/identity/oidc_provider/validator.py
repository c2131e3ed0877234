"""The toolkit's validator with the groups claim and the misbehaviours the knobs file asks for."""

import base64
import json
import os
import time

from jwcrypto import jwk, jwt
from oauth2_provider.oauth2_validators import OAuth2Validator

_other_key = jwk.JWK.generate(kty="RSA", size=2048)
# Published in the JWKS beside the toolkit's RSA key (urls.py): ID tokens signed ES256 on request.
ec_key = jwk.JWK.generate(kty="EC", crv="P-256", kid="ec-test", alg="ES256")


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
        settings = knobs()
        header, claims, _ = signed.split(".")
        if settings.get("bad_signature"):
            # The same header (the published key's kid) and claims, signed by a key the JWKS does not hold.
            return _sign(_decode(header), _decode(claims), _other_key)
        if settings.get("unknown_kid"):
            return _sign(
                json.dumps({"alg": "RS256", "kid": "not-published", "typ": "JWT"}),
                _decode(claims),
                _other_key,
            )
        if settings.get("alg") == "ES256":
            return _sign(
                json.dumps({"alg": "ES256", "kid": "ec-test", "typ": "JWT"}), _decode(claims), ec_key
            )
        if settings.get("alg") == "HS256":
            # The client secret as an HMAC key: the old trick against a client that takes any algorithm.
            secret = jwk.JWK(
                kty="oct",
                k=base64.urlsafe_b64encode(os.environ["PROVIDER_CLIENT_SECRET"].encode())
                .decode()
                .rstrip("="),
            )
            return _sign(json.dumps({"alg": "HS256", "typ": "JWT"}), _decode(claims), secret)
        if settings.get("alg") == "none":
            unsigned = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').decode().rstrip("=")
            return f"{unsigned}.{claims}."
        return signed


def _sign(header: str, claims: str, key) -> str:
    token = jwt.JWT(header=header, claims=claims)
    token.make_signed_token(key)
    return token.serialize()


def _decode(part: str) -> str:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)).decode()
