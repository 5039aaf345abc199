"""What only the DOCA storage reference applications share (the code every app shares is in `apps.common`).

Three rooms, by what they hold:

* `.wire` — byte formats, pure data: the 13 control messages (`.wire.control`), the
  64-byte io message, gga address maths, the on-storage formats (`.sbc`,
  `.compressed_block`, `.lz4_blocks`);
* `.channels` — control channels: length-prefixed framing over TCP
  (`.channels.control_channel`) or a comch connection (`.channels.comch_transport`);
* `.runtime` — the bridges' control phase, worker base and ``main`` (`.runtime.service_control`,
  `.runtime.bridge_worker`, `.runtime.app_main`) and offload batches (`.runtime.offload`).

Unlike the C++ reference, every value received from a peer is validated before use.
"""
