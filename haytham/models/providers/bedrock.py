"""AWS Bedrock: Claude with AWS credentials (boto's chain, a profile, keys or a Bedrock API key)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from strands.models import Model

from haytham.models.providers.spec import (
    MAX_OUTPUT_TOKENS,
    KeyField,
    ModelRequest,
    ProviderSettings,
    ProviderSpec,
    StatusCheck,
)


def boto_session(settings: ProviderSettings) -> Any:
    """A boto3 session with the AWS credentials, profile and region the settings hold (from the
    environment or `.env`); with none of them, ``None``: boto's own chain (SSO, roles, files)."""
    options = {
        "aws_access_key_id": settings.secret("aws_access_key_id"),
        "aws_secret_access_key": settings.secret("aws_secret_access_key"),
        "aws_session_token": settings.secret("aws_session_token"),
        "profile_name": settings.aws_profile,
        "region_name": settings.aws_region,
    }
    given = {k: v for k, v in options.items() if v}
    if not given:
        return None
    import boto3

    return boto3.Session(**given)


def _aws_credentials(settings: ProviderSettings, env: Mapping[str, str], use_boto: bool) -> bool:
    """AWS credentials in the settings, or where boto's own chain finds them (``env`` is the
    real environment: web identity, ``~/.aws`` under ``HOME``)."""
    if settings.secret("aws_bearer_token_bedrock"):
        return True
    if settings.secret("aws_access_key_id") and settings.secret("aws_secret_access_key"):
        return True
    if settings.aws_profile or env.get("AWS_WEB_IDENTITY_TOKEN_FILE"):
        return True
    home = Path(env.get("HOME", str(Path.home())))
    if (home / ".aws" / "credentials").is_file() or (home / ".aws" / "config").is_file():
        return True
    if not use_boto:
        return False
    try:  # full boto3 chain (SSO, container and instance roles); may take a second
        import boto3

        session = boto_session(settings) or boto3.Session()
        return session.get_credentials() is not None
    except Exception:
        return False


def build(request: ModelRequest) -> Model:
    """Strands' ``BedrockModel`` with one attempt per call (retries happen in the factory)."""
    from botocore.config import Config as BotocoreConfig
    from strands.models.bedrock import BedrockModel

    timeout = request.timeout
    return BedrockModel(
        boto_session=boto_session(request.settings),
        api_key=request.settings.secret("aws_bearer_token_bedrock"),
        model_id=request.model_id,
        max_tokens=MAX_OUTPUT_TOKENS[request.tier],
        boto_client_config=BotocoreConfig(
            read_timeout=timeout,
            connect_timeout=min(timeout, 30.0),
            retries={"max_attempts": 1, "mode": "standard"},
        ),
    )


def status(settings: ProviderSettings, check: StatusCheck) -> tuple[bool, str]:
    """Usable when AWS credentials are found (the full boto chain only when thorough)."""
    if _aws_credentials(settings, check.env, use_boto=check.thorough):
        return True, "AWS credentials found (region from AWS_REGION, default us-west-2)."
    return False, (
        "no AWS credentials found: set AWS_PROFILE or AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY (or AWS_BEARER_TOKEN_BEDROCK)."
    )


def sampling(model: Model, model_id: str, temperature: float, seed: int) -> list[str]:
    """Temperature only: Bedrock takes no seed."""
    model.update_config(temperature=temperature)
    return [f"temperature={temperature}", "no seed support"]


SPEC = ProviderSpec(
    name="bedrock",
    label="bedrock: Claude on AWS Bedrock",
    default_models=MappingProxyType(
        {
            "light": "global.anthropic.claude-haiku-4-5-20251001-v1:0",
            "heavy": "global.anthropic.claude-sonnet-4-6",
            "reasoning": "global.anthropic.claude-opus-4-6-v1",
        }
    ),
    context_window=200_000,
    build=build,
    status=status,
    variables=(
        "AWS_PROFILE",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_REGION",
        "AWS_BEARER_TOKEN_BEDROCK",
    ),
    secret_fields=(
        "aws_access_key_id",
        "aws_secret_access_key",
        "aws_session_token",
        "aws_bearer_token_bedrock",
    ),
    credential_patterns=(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",),
    credential_hint=(
        "check your AWS credentials (AWS_PROFILE or AWS_ACCESS_KEY_ID) and Bedrock model access"
    ),
    key=KeyField("aws_bearer_token_bedrock", "AWS_BEARER_TOKEN_BEDROCK", "Bedrock API key"),
    one_token=lambda model, settings: model.update_config(max_tokens=1),
    sampling=sampling,
)
"""Claude on AWS Bedrock."""
