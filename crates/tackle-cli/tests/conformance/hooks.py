# Schemathesis hooks of crates/tackle-cli/tests/conformance.rs.
#
# The agent model asked for JSON (`response_format`, `text.format`, `output_schema`) by a generated
# request answers 502 `output_invalid` when the fake model's answer does not match the generated
# schema: a documented, correct answer, which schemathesis.toml lets through for those operations.
# Any other 502 (the provider refused Tackle's request, the loop guard) is still a failure: this
# check accepts a 502 only when its error code is `output_invalid`.
import schemathesis


@schemathesis.check
def a_502_is_only_output_invalid(ctx, response, case):
    """A 502 is only a structured answer that never matched its schema (`output_invalid`)."""
    if response.status_code != 502:
        return None
    try:
        body = response.json()
    except Exception:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    if code != "output_invalid":
        raise AssertionError(f"502 with error code {code!r}: only `output_invalid` is an expected 502")
    return None
