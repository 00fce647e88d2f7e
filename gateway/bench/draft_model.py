"""A draft model made from a GGUF by keeping some of its layers, for `speculative: {mode: draft}`
where no smaller model with the same vocabulary is at hand (the bundled model is the smallest of
its family): the benchmark and the tests draft with it.

Dropping layers keeps the vocabulary, the embeddings and the output head, so the token ids mean
the same; the predictions are the served model's with its middle skipped (self-speculation by
layer skipping). Untrained, such a draft agrees with the full model on a fifth to a quarter of
tokens: enough to exercise every path of drafting, and a test of whether the scheduler notices that
a draft does not pay.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def keep_layers(source: Path, target: Path, layers: list[int]) -> None:
    """Write `target`: `source` with only `layers` (numbered as in `source`), renumbered in order."""
    import gguf  # the bench extra's: only this benchmark writes a GGUF

    reader = gguf.GGUFReader(source)
    architecture = _architecture(reader)
    writer = gguf.GGUFWriter(target, architecture)
    copy_metadata(reader, writer, {f"{architecture}.block_count": len(layers)})
    for tensor in reader.tensors:
        name = tensor.name
        if name.startswith("blk."):
            _, number, rest = name.split(".", 2)
            if int(number) not in layers:
                continue
            name = f"blk.{layers.index(int(number))}.{rest}"
        writer.add_tensor(name, tensor.data, raw_shape=tensor.data.shape, raw_dtype=tensor.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def copy_metadata(reader: Any, writer: Any, changed: Mapping[str, int | list[str]]) -> None:
    """Every key of a `gguf.GGUFReader` into a `gguf.GGUFWriter`, those in `changed` with their new
    value (an unsigned count, or an array of strings)."""
    import gguf

    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue  # written by the writer itself
        kind = field.types[0]
        if name in changed:
            value = changed[name]
            if isinstance(value, int):
                writer.add_uint32(name, value)
            else:
                writer.add_array(name, value)
        elif kind == gguf.GGUFValueType.ARRAY:
            writer.add_array(name, _array(field, gguf))
        elif kind == gguf.GGUFValueType.STRING:
            writer.add_string(name, bytes(field.parts[field.data[0]]).decode("utf-8", "surrogateescape"))
        else:
            writer.add_key_value(name, field.parts[field.data[0]].tolist()[0], kind)


def strings(reader: Any, name: str) -> list[str]:
    """A GGUF array of strings (`tokenizer.ggml.tokens`), as written."""
    import gguf

    return _array(reader.fields[name], gguf)


def _array(field: Any, gguf: Any) -> list[Any]:
    if field.types[1] == gguf.GGUFValueType.STRING:
        return [bytes(field.parts[i]).decode("utf-8", "surrogateescape") for i in field.data]
    return [field.parts[i].tolist()[0] for i in field.data]


def _architecture(reader: Any) -> str:
    field = reader.fields["general.architecture"]
    return bytes(field.parts[field.data[0]]).decode()


def layer_count(source: Path) -> int:
    import gguf

    reader = gguf.GGUFReader(source)
    count = reader.fields[f"{_architecture(reader)}.block_count"]
    return int(count.parts[count.data[0]][0])


def skip_middle(source: Path, target: Path, skipped: int) -> None:
    """`source` without `skipped` layers from its middle: the first and last layers carry most of
    what makes the output readable."""
    total = layer_count(source)
    start = (total - skipped) // 2
    keep_layers(source, target, [i for i in range(total) if not start <= i < start + skipped])
