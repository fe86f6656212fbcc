"""Reads a TensorBoard event file as TensorBoard's loader does and checks it
against a dpc metrics file.

The records' framing and both masked CRC-32Cs are checked (CRC-32C computed
here, bit by bit), and each record is parsed by Python's protobuf library
as tensorflow.Event (wall_time = 1, step = 2, file_version = 3, summary = 5;
Summary.value = 1; Value.tag = 1, simple_value = 2), the messages declared
here from TensorFlow's event.proto and summary.proto field numbers. The
first event must name "brain.Event:2"; every step record of METRICS must
have an event at its step whose scalars equal the record's numbers (as
float32).

Usage: read_tensorboard.py DIR METRICS
Prints "tensorboard: N events, M scalars match the metrics"; exits 1 on a
mismatch, 2 on unreadable input.
"""
import glob
import json
import os
import struct
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def event_class():
    """tensorflow.Event with the fields TensorBoard's scalars use."""
    proto = descriptor_pb2.FileDescriptorProto(name="event_subset.proto",
                                               package="tensorflow")
    F = descriptor_pb2.FieldDescriptorProto

    def message(name, fields):
        m = proto.message_type.add(name=name)
        for field_name, number, kind, type_name, repeated in fields:
            f = m.field.add(name=field_name, number=number, type=kind,
                            label=F.LABEL_REPEATED if repeated
                            else F.LABEL_OPTIONAL)
            if type_name:
                f.type_name = type_name
    message("Value", [("tag", 1, F.TYPE_STRING, None, False),
                      ("simple_value", 2, F.TYPE_FLOAT, None, False)])
    message("Summary", [("value", 1, F.TYPE_MESSAGE, ".tensorflow.Value",
                         True)])
    message("Event", [("wall_time", 1, F.TYPE_DOUBLE, None, False),
                      ("step", 2, F.TYPE_INT64, None, False),
                      ("file_version", 3, F.TYPE_STRING, None, False),
                      ("summary", 5, F.TYPE_MESSAGE, ".tensorflow.Summary",
                       False)])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.MessageFactory(pool).GetPrototype(
        pool.FindMessageTypeByName("tensorflow.Event"))


def records(path):
    data = open(path, "rb").read()
    at = 0
    while at < len(data):
        if len(data) - at < 16:
            raise ValueError(f"{path}: a truncated record at byte {at}")
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        body = data[at + 12:at + 12 + length]
        (body_crc,) = struct.unpack("<I", data[at + 12 + length:
                                               at + 16 + length])
        if header_crc != masked(header) or body_crc != masked(body):
            raise ValueError(f"{path}: bad CRC in the record at byte {at}")
        yield body
        at += 16 + length


def main():
    directory, metrics = sys.argv[1], sys.argv[2]
    files = glob.glob(os.path.join(directory, "events.out.tfevents.*"))
    if len(files) != 1:
        print(f"read_tensorboard: {len(files)} event files in {directory}",
              file=sys.stderr)
        return 2
    Event = event_class()
    events = []
    try:
        for body in records(files[0]):
            event = Event()
            event.ParseFromString(body)
            events.append(event)
    except ValueError as e:
        print(f"read_tensorboard: {e}", file=sys.stderr)
        return 1
    if not events or events[0].file_version != "brain.Event:2":
        print("read_tensorboard: the first event names no file version")
        return 1
    scalars = {}
    for event in events[1:]:
        for value in event.summary.value:
            scalars[(event.step, value.tag)] = value.simple_value
    bad = matched = 0
    for line in open(metrics):
        record = json.loads(line) if line.strip() else {}
        if "step" not in record:
            continue
        for key, value in record.items():
            if key == "step" or isinstance(value, (list, dict, bool)):
                continue
            got = scalars.get((record["step"], key))
            want = struct.unpack("<f", struct.pack("<f", value))[0]
            if got != want:
                print(f"step {record['step']} {key}: metrics {value}, "
                      f"tensorboard {got}")
                bad += 1
            else:
                matched += 1
    if bad or not matched:
        print(f"read_tensorboard: {bad} scalars differ, {matched} match",
              file=sys.stderr)
        return 1
    print(f"tensorboard: {len(events)} events, {matched} scalars match the "
          f"metrics")
    return 0


if __name__ == "__main__":
    sys.exit(main())
