"""The verdict a model is asked to reply with, as a pydantic model, and the JSON schema of it
that a request's `response_format` carries.

Verdict schema 2: `explanation` first (models fill a strict schema in order, so the reasoning
is written before the verdict and can inform it), then `assessment`, then `violations`: each
rule the code breaks, by its SPEC number, with the offending line quoted. The bundled prompts
ask for the same in words (`secbench_tui/prompts/`).

The schema is generated from `VerdictReply` (`model_json_schema`), never written by hand. It is
written for OpenAI's structured outputs in strict mode, which wants every object closed
(`additionalProperties: false`, from `extra="forbid"`) and every property required (no field
has a default), and by `StructuredOutputSchema`, a pydantic schema generator that writes
nested models in place (no `$defs`), leaves out titles and descriptions (the words for the model
are the prompt's), and keeps each key where pydantic puts it, `type` first. That is byte for byte
the schema every earlier version sent, so requests are the same bytes as before.

Replies are read by `core.results.parsing`, which reads more than this model allows (schema 1
replies without `violations`, keys in any case, a rule written `"rule 5"`) and never guesses.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from secbench_tui.core.models import JSONObject


class ReplyViolation(BaseModel):
    """One rule the code breaks: its number in the app's SPEC, and the offending line."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when first used

    rule: int
    quote: str


class VerdictReply(BaseModel):
    """What a model is asked to reply: why, then good or bad, then the violations (none
    exactly when the code is good)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    explanation: str
    assessment: Literal["good", "bad"]
    violations: list[ReplyViolation]


class StructuredOutputSchema(GenerateJsonSchema):
    """pydantic's JSON schema as structured outputs take it: nested models in place, no
    titles or descriptions, keys in the order made (see the module's docstring)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        json_schema = super().model_schema(schema)
        json_schema.pop("title", None)
        json_schema.pop("description", None)  # a model's docstring is for the program's readers
        return json_schema

    def literal_schema(self, schema: core_schema.LiteralSchema) -> JsonSchemaValue:
        json_schema = super().literal_schema(schema)
        if "type" not in json_schema:
            return json_schema
        return {"type": json_schema.pop("type"), **json_schema}

    def sort(self, value: JsonSchemaValue, parent_key: str | None = None) -> JsonSchemaValue:
        return value  # as made: `type` first, the properties in their fields' order

    def generate(self, schema: CoreSchema, mode: JsonSchemaMode = "validation") -> JsonSchemaValue:
        json_schema = super().generate(schema, mode)
        definitions = json_schema.pop("$defs", {})
        in_place: JsonSchemaValue = _in_place(json_schema, definitions)
        return in_place


def _in_place(value: Any, definitions: dict[str, Any]) -> Any:
    """`value` with each `{"$ref": "#/$defs/X"}` replaced by X's schema (no model here refers
    to itself, so this ends)."""
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str) and len(value) == 1:
            return _in_place(definitions[ref.removeprefix("#/$defs/")], definitions)
        return {key: _in_place(item, definitions) for key, item in value.items()}
    if isinstance(value, list):
        return [_in_place(item, definitions) for item in value]
    return value


@cache
def verdict_schema() -> JSONObject:
    """The JSON schema of `VerdictReply`, as `response_format` sends it (made once)."""
    return VerdictReply.model_json_schema(schema_generator=StructuredOutputSchema)
