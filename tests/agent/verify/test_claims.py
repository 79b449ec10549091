"""Claim checks (verify/claims.py): the concrete tokens of a report against the run's results.
No model: each wrong kind of token is caught, and a report that says only what the results
show has nothing flagged."""

from tests.agent.test_loop_fakes import FATAL, POD
from triage_agent import prompts
from triage_agent.verify import claims

DESCRIBE = f"""pod prod/{POD} phase=Running qos=Burstable
container checkout image=registry.example.com/shop/checkout:v2.3.0
container checkout limits memory=256Mi
container checkout env PAYMENT_API_KEY from secret payment-credentials key api-key
container checkout last_state=terminated reason=Error exit_code=1
event 2026-12-07T20:06:57Z Warning BackOff Pod/{POD} count=208: Back-off 5m0s restarting
cpu throttled avg=44% of CFS periods; service checkout port 8080/TCP"""
RESULTS = {"toolu_describe": DESCRIBE, "toolu_logs": f"starting checkout version=2.3.0\n{FATAL}"}


def unsupported(text, results=RESULTS, **kw):
    out = claims.check_claims([("summary", text)], results, **kw)
    return [(c["kind"], c["token"]) for c in out["unsupported"]]


def test_a_fully_supported_report_has_nothing_flagged():
    text = (f"Pod {POD} (image registry.example.com/shop/checkout:v2.3.0) exits with exit code 1 "
            "because PAYMENT_API_URL is not set; its limit is 256Mi, it backs off 5 minutes "
            "(5m0s) between starts, 44% of CPU periods are throttled and port 8080 is served. "
            f"The log says `{FATAL}` and the image is v2.3.0, as deployment/checkout runs it.")
    out = claims.check_claims([("summary", text)], RESULTS)
    assert out["unsupported"] == [] and out["checked"] >= 10


def test_a_wrong_exit_code_is_flagged_with_its_sentence():
    out = claims.check_claims([("hypothesis", "It is out of memory. The container was killed "
                                "with exit code 137 at start-up.")], RESULTS)
    assert [(c["kind"], c["token"], c["where"]) for c in out["unsupported"]] == [
        ("exit_code", "exit code 137", "hypothesis")]
    assert out["unsupported"][0]["sentence"] == ("The container was killed with exit code 137 at "
                                                 "start-up.")


def test_an_exit_code_counts_only_as_an_exit_code():
    # 137 is in the results, but not as an exit code; 1 is
    results = {"a": "count=137 exit_code=1"}
    assert unsupported("it exited with code 137", results) == [
        ("exit_code", "exited with code 137")]
    assert unsupported("it exited with code 1", results) == []


def test_an_unseen_image_tag_is_flagged():
    assert unsupported("the rollout to checkout:v2.4.1 broke it") == [
        ("image", "checkout:v2.4.1"), ("version", "v2.4.1")]
    assert unsupported("registry.example.com/shop/checkout:v2.5.0 is running") == [
        ("image", "registry.example.com/shop/checkout:v2.5.0"), ("version", "v2.5.0")]


def test_a_version_is_found_with_or_without_its_v():
    assert unsupported("checkout 2.3.0 runs, as does v2.3.0.") == []


def test_an_unseen_size_is_flagged_and_units_are_spelled_either_way():
    assert unsupported("the 512Mi limit is hit") == [("size", "512Mi")]
    assert unsupported("the 256 MiB limit is hit") == []


def test_an_unseen_env_var_is_flagged():
    assert unsupported("PAYMENT_API_KEY is set but DATABASE_URL is not") == [
        ("env", "DATABASE_URL")]


def test_quoted_strings_percentages_durations_and_counts():
    assert unsupported('the log says "connection refused"') == [("quoted", "connection refused")]
    assert unsupported("throttled 95% of the time") == [("percent", "95%")]
    assert unsupported("it backs off for 10 minutes") == [("duration", "10 minutes")]
    assert unsupported("it listens on port 9090") == [("count", "port 9090")]


def test_an_unseen_generated_name_is_flagged_as_grounding_does():
    assert unsupported("pod checkout-6f8d9c7b5d-zzzzz is gone") == [
        ("name", "checkout-6f8d9c7b5d-zzzzz")]
    assert unsupported("deployment/payments is down") == [("name", "payments")]


def test_what_the_symptom_or_system_prompt_supplied_is_no_claim():
    given = ["cart pods OOM at 512Mi since v9.9.9", prompts.SYSTEM_PROMPT]
    out = claims.check_claims([("summary", "the pods hit 512Mi since v9.9.9 and are refused "
                                "with 403 Forbidden")], RESULTS, given=given)
    assert out == {"checked": 0, "unsupported": []}


def test_whitespace_is_aside_and_a_token_counts_once():
    out = claims.check_claims([("summary", "`required environment   variable PAYMENT_API_URL`"),
                               ("hypothesis", "PAYMENT_API_URL again, and PAYMENT_API_URL")],
                              RESULTS)
    assert out == {"checked": 2, "unsupported": []}


def test_report_texts_are_summary_hypothesis_and_reasons():
    report = {"summary": "s", "hypothesis": "h", "evidence": [{"interpretation": "i"}],
              "proposed_actions": [{"reason": "r"}, "junk"], "next_checks": ["n"]}
    assert claims.report_texts(report) == [("summary", "s"), ("hypothesis", "h"),
                                           ("proposed_actions[0].reason", "r")]


def test_any_text_can_be_checked_against_any_results():
    # the shape a follow-up answer uses: one string, results as a list of texts
    out = claims.check_claims("the limit is 256Mi, not 1Gi", [DESCRIBE])
    assert out["checked"] == 2 and [c["token"] for c in out["unsupported"]] == ["1Gi"]
