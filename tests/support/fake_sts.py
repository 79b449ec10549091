"""A fake of STS's AssumeRole (the query API's form POST, the XML answer) that checks every
request's SigV4 signature with botocore's own signer, for the AWS credential chain's role
profiles. botocore is imported where it is used: a collection of the tests loads none of it."""

from tests.support.fake_endpoints import FakeEndpoints


def assume_role_xml(key, token, expiry="2026-12-07T13:00:00Z"):
    return (f"""<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>
  <Credentials><AccessKeyId>{key}</AccessKeyId><SecretAccessKey>{key}-secret</SecretAccessKey>
  <SessionToken>{token}</SessionToken><Expiration>{expiry}</Expiration></Credentials>
  <AssumedRoleUser><Arn>arn:aws:sts::1:assumed-role/x/s</Arn><AssumedRoleId>AROA:s</AssumedRoleId></AssumedRoleUser>
</AssumeRoleResult></AssumeRoleResponse>""").encode()


def fake_sts(keys, answers, region="eu-west-1"):
    """STS's AssumeRole: each request's SigV4 signature is checked with botocore's signer against
    `keys` ({access key: (secret, session token or None)}); the roles it is asked for in turn
    get `answers` (role ARN -> (access key, token[, expiry])) as XML."""
    import datetime
    from urllib.parse import parse_qs
    from botocore import auth as botocore_auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials as BotoCredentials

    def serve(record):
        said = record["headers"].get("authorization", "")
        access = said.split("Credential=", 1)[-1].split("/", 1)[0]
        if access not in keys or "/sts/aws4_request" not in said or f"/{region}/" not in said:
            return 403, {}, b"<ErrorResponse><Error><Code>InvalidClientTokenId</Code></Error></ErrorResponse>"
        secret, token = keys[access]
        signed = said.split("SignedHeaders=", 1)[1].split(",", 1)[0].split(";")
        request = AWSRequest(method="POST", url=f"http://{record['headers']['host']}/", data=record["body"],
                             headers={k: v for k, v in record["headers"].items() if k in signed})
        when = datetime.datetime.strptime(record["headers"]["x-amz-date"], "%Y%m%dT%H%M%SZ")
        original, botocore_auth.get_current_datetime = botocore_auth.get_current_datetime, lambda: when
        try:
            botocore_auth.SigV4Auth(BotoCredentials(access, secret, token), "sts", region).add_auth(request)
        finally:
            botocore_auth.get_current_datetime = original
        if request.headers["Authorization"] != said:
            return 403, {}, b"<ErrorResponse><Error><Code>SignatureDoesNotMatch</Code></Error></ErrorResponse>"
        form = {k: v[0] for k, v in parse_qs(record["body"].decode()).items()}
        record["form"] = form
        return 200, {"content-type": "text/xml"}, assume_role_xml(*answers[form["RoleArn"]])
    return FakeEndpoints({("POST", "/"): serve})
