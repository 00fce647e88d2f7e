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

from pathlib import Path


def keep_layers(source: Path, target: Path, layers: list[int]) -> None:
    """Write `target`: `source` with only `layers` (numbered as in `source`), renumbered in order."""
    import gguf  # the bench extra's: only this benchmark writes a GGUF

    reader = gguf.GGUFReader(source)
    field = reader.fields["general.architecture"]
    architecture = bytes(field.parts[field.data[0]]).decode()
    writer = gguf.GGUFWriter(target, architecture)
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue  # written by the writer itself
        kind = field.types[0]
        if name == f"{architecture}.block_count":
            writer.add_uint32(name, len(layers))
        elif kind == gguf.GGUFValueType.ARRAY:
            if field.types[1] == gguf.GGUFValueType.STRING:
                writer.add_array(name, [bytes(field.parts[i]).decode("utf-8", "surrogateescape") for i in field.data])
            else:
                writer.add_array(name, [field.parts[i].tolist()[0] for i in field.data])
        elif kind == gguf.GGUFValueType.STRING:
            writer.add_string(name, bytes(field.parts[field.data[0]]).decode("utf-8", "surrogateescape"))
        else:
            writer.add_key_value(name, field.parts[field.data[0]].tolist()[0], kind)
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


def layer_count(source: Path) -> int:
    import gguf

    reader = gguf.GGUFReader(source)
    field = reader.fields["general.architecture"]
    architecture = bytes(field.parts[field.data[0]]).decode()
    count = reader.fields[f"{architecture}.block_count"]
    return int(count.parts[count.data[0]][0])


def skip_middle(source: Path, target: Path, skipped: int) -> None:
    """`source` without `skipped` layers from its middle: the first and last layers carry most of
    what makes the output readable."""
    total = layer_count(source)
    start = (total - skipped) // 2
    keep_layers(source, target, [i for i in range(total) if not start <= i < start + skipped])
