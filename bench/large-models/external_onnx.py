"""ONNX models whose weights live in an external data file, written and read
tensor by tensor, so that a model far larger than memory can be made and
checked without holding its weights.

The ONNX format (onnx/onnx.proto, "External Tensor Data"): an initializer
with data_location EXTERNAL has no raw_data but `external_data` entries
`location` (a file name relative to the model file's directory), `offset`
and `length` (bytes, optional). `ExternalDataWriter` appends each tensor to
one such file as numpy chunks arrive and returns its TensorProto, so a
generator's resident memory is one chunk, whatever the model's size.

    writer = ExternalDataWriter("model.onnx")          # -> model.onnx.data
    t = writer.add_chunks("w", (4096, 4096), "float32", chunks)
    graph = onnx.helper.make_graph(nodes, "g", inputs, outputs, [t, ...])
    writer.close()
    save_model(onnx.helper.make_model(graph, ...), "model.onnx")

Used by gen_random_gpt.py (the bench's random GPT, and small models for
tests) and run.py (re-saving torch.onnx's exports into one file, reading
initializers back for PyTorch without loading the model).
"""

import os

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import TensorProto

# Element types the writer takes, by name: (ONNX type, numpy type of the
# bytes written). bfloat16 has no numpy type: its bytes are the high halves
# of float32 values, rounded to nearest even.
DTYPES = {
    "float32": (TensorProto.FLOAT, np.float32),
    "float16": (TensorProto.FLOAT16, np.float16),
    "bfloat16": (TensorProto.BFLOAT16, np.uint16),
    "float64": (TensorProto.DOUBLE, np.float64),
    "int64": (TensorProto.INT64, np.int64),
}
NUMPY_OF_ONNX = {onnx_type: np_type for onnx_type, np_type in DTYPES.values()}
CHUNK_ELEMENTS = 1 << 22  # 16 MiB of float32 a chunk


def to_bfloat16_bits(values):
    """float32 array -> uint16 array of its bfloat16 bits (round to nearest
    even, as torch's .to(torch.bfloat16); NaN stays NaN)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = np.isnan(values)
    rounded[nan] = (bits[nan] >> 16) | 0x40
    return rounded.astype(np.uint16)


def encode(values, dtype):
    """A float array as the bytes of `dtype` (a DTYPES name)."""
    if dtype == "bfloat16":
        return to_bfloat16_bits(values)
    return np.ascontiguousarray(values, dtype=DTYPES[dtype][1])


def external_tensor(name, shape, onnx_type, location, offset, length):
    """A TensorProto that points at `length` bytes at `offset` of
    `location` (relative to the model file)."""
    tensor = TensorProto()
    tensor.name = name
    tensor.data_type = onnx_type
    tensor.dims.extend(int(d) for d in shape)
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", str(offset)),
                       ("length", str(length))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return tensor


class ExternalDataWriter:
    """Appends tensors to one external data file beside a model file.

    `align`: each tensor starts at a multiple of this many bytes (4096, a
    page, lets a reader map a tensor without copying; 1 packs them as
    onnx.save_model does)."""

    def __init__(self, model_path, location=None, align=4096):
        directory = os.path.dirname(os.path.abspath(model_path))
        self.location = location or os.path.basename(model_path) + ".data"
        self.path = os.path.join(directory, self.location)
        self.align = max(1, int(align))
        self.file = open(self.path, "wb")
        self.offset = 0

    def append(self, blocks):
        """Writes byte blocks (anything with the buffer protocol) as one
        tensor's data, aligned; returns (offset, length)."""
        pad = -self.offset % self.align
        self.file.seek(self.offset)
        if pad:
            self.file.write(b"\0" * pad)
            self.offset += pad
        start = self.offset
        for block in blocks:
            view = memoryview(block).cast("B")
            self.file.write(view)
            self.offset += view.nbytes
        return start, self.offset - start

    def add_chunks(self, name, shape, dtype, chunks):
        """Writes a tensor of `shape` whose values, in C order, are the
        concatenation of `chunks` (float arrays, converted to `dtype`), and
        returns its TensorProto."""
        expected = int(np.prod(shape, dtype=np.int64))
        counted = [0]

        def encoded():
            for chunk in chunks:
                data = encode(chunk, dtype).reshape(-1)
                counted[0] += data.size
                yield data
        start, length = self.append(encoded())
        if counted[0] != expected:
            raise ValueError(f"{name}: chunks hold {counted[0]} values, "
                             f"shape {tuple(shape)} needs {expected}")
        return external_tensor(name, shape, DTYPES[dtype][0], self.location,
                               start, length)

    def add_array(self, name, array, dtype=None):
        """Writes a whole array (small tensors; `dtype` defaults to its
        own)."""
        array = np.asarray(array)
        dtype = dtype or array.dtype.name
        flat = array.reshape(-1)
        chunks = (flat[i:i + CHUNK_ELEMENTS]
                  for i in range(0, max(flat.size, 1), CHUNK_ELEMENTS))
        return self.add_chunks(name, array.shape, dtype, chunks)

    def add_hole(self, name, shape, dtype):
        """Reserves a tensor of zeros without writing it: a hole in a sparse
        file, which takes no disk (a model that is only compiled, larger
        than the disk could hold twice)."""
        self.offset += -self.offset % self.align
        start = self.offset
        self.offset += int(np.prod(shape, dtype=np.int64)) * np.dtype(
            DTYPES[dtype][1]).itemsize
        return external_tensor(name, shape, DTYPES[dtype][0], self.location,
                               start, self.offset - start)

    def close(self):
        self.file.truncate(self.offset)
        self.file.close()


def random_chunks(shape, seed, std=0.02, fill="random"):
    """The values of a tensor, CHUNK_ELEMENTS at a time: N(0, std^2) from
    numpy's PCG64 seeded with `seed` ("random"), or `std` everywhere
    ("constant", much faster, for a model that is only compiled)."""
    total = int(np.prod(shape, dtype=np.int64))
    rng = np.random.default_rng(seed)
    for start in range(0, total, CHUNK_ELEMENTS):
        count = min(CHUNK_ELEMENTS, total - start)
        if fill == "constant":
            yield np.full(count, std, dtype=np.float32)
        else:
            chunk = rng.standard_normal(count, dtype=np.float32)
            chunk *= np.float32(std)
            yield chunk


def save_model(model, path):
    """Writes the model's protobuf alone: initializers already external stay
    where ExternalDataWriter put them (onnx.save_model with
    save_as_external_data would rewrite them)."""
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def _file_blocks(path, offset, length, block=CHUNK_ELEMENTS * 4):
    with open(path, "rb") as f:
        f.seek(offset)
        left = length
        while left > 0:
            data = f.read(min(block, left))
            if not data:
                raise ValueError(f"{path}: {os.path.getsize(path)} bytes, "
                                 f"a tensor at offset {offset} needs "
                                 f"{length}")
            left -= len(data)
            yield data


def resave_one_file(source, target, location=None, size_threshold=1024,
                    align=4096):
    """Re-saves `source` (weights inline, or in external files of any
    layout, as torch.onnx writes past 2 GiB: a file per tensor) as `target`
    with every initializer of `size_threshold` bytes or more in one external
    file `location` (default TARGET.data) beside it, as onnx.save_model(...,
    save_as_external_data=True, all_tensors_to_one_file=True) does, but a
    tensor at a time: external tensors are copied file to file, so memory
    holds the protobuf and one block (an inline source, under 2 GiB, is
    held once)."""
    model = onnx.load(source, load_external_data=False)
    source_dir = os.path.dirname(os.path.abspath(source))
    writer = ExternalDataWriter(target, location, align)
    # torch.onnx past 2 GiB moves Constant nodes' values out too.
    tensors = list(model.graph.initializer) + [
        attr.t for node in model.graph.node for attr in node.attribute
        if attr.HasField("t")]
    try:
        for tensor in tensors:
            if tensor.data_location == TensorProto.EXTERNAL:
                entries = {e.key: e.value for e in tensor.external_data}
                path = os.path.join(source_dir, entries["location"])
                offset = int(entries.get("offset", 0))
                length = int(entries.get("length", os.path.getsize(path) -
                                         offset))
                blocks = _file_blocks(path, offset, length)
            elif len(tensor.raw_data) >= size_threshold:
                blocks = [tensor.raw_data]
            else:
                continue  # small, or in typed fields: stays inline
            start, length = writer.append(blocks)
            tensor.raw_data = b""
            del tensor.external_data[:]
            replacement = external_tensor(tensor.name, [], tensor.data_type,
                                          writer.location, start, length)
            tensor.data_location = TensorProto.EXTERNAL
            tensor.external_data.extend(replacement.external_data)
    finally:
        writer.close()
    save_model(model, target)


def external_files(model_path):
    """The external data files a model names, as absolute paths."""
    model = onnx.load(model_path, load_external_data=False)
    directory = os.path.dirname(os.path.abspath(model_path))
    files = set()
    for tensor in model.graph.initializer:
        if tensor.data_location == TensorProto.EXTERNAL:
            entries = {e.key: e.value for e in tensor.external_data}
            files.add(os.path.join(directory, entries["location"]))
    return sorted(files)


def model_bytes(model_path):
    """The model's bytes on disk: the model file and its external files."""
    return os.path.getsize(model_path) + sum(
        os.path.getsize(f) for f in external_files(model_path))


def remove_model(model_path):
    """Deletes a model file and its external data files."""
    if not os.path.exists(model_path):
        return
    for path in external_files(model_path):
        if os.path.exists(path):
            os.remove(path)
    os.remove(model_path)


def read_initializers(model_path):
    """{name: numpy array} of every initializer, external ones memory-mapped
    read-only from their files (nothing is read until used)."""
    model = onnx.load(model_path, load_external_data=False)
    directory = os.path.dirname(os.path.abspath(model_path))
    arrays = {}
    for tensor in model.graph.initializer:
        if tensor.data_location != TensorProto.EXTERNAL:
            arrays[tensor.name] = onnx.numpy_helper.to_array(tensor)
            continue
        entries = {e.key: e.value for e in tensor.external_data}
        np_type = NUMPY_OF_ONNX[tensor.data_type]
        count = int(np.prod(tensor.dims, dtype=np.int64))
        offset = int(entries.get("offset", 0))
        if "length" in entries and \
                int(entries["length"]) != count * np.dtype(np_type).itemsize:
            raise ValueError(f"{tensor.name}: length {entries['length']} "
                             f"disagrees with its shape {list(tensor.dims)}")
        arrays[tensor.name] = np.memmap(
            os.path.join(directory, entries["location"]), dtype=np_type,
            mode="r", offset=offset, shape=tuple(tensor.dims) or (1,))
        if not tensor.dims:
            arrays[tensor.name] = arrays[tensor.name].reshape(())
    return arrays
