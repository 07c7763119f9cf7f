import type { AnyMessage, Stream } from "@agentclientprotocol/sdk";

export type TrafficListener = (direction: "in" | "out", message: AnyMessage) => void;

/** The same stream, with every message in and out shown to `listener` (the raw-traffic log). */
export function tapStream(stream: Stream, listener: TrafficListener): Stream {
  const incoming = new TransformStream<AnyMessage, AnyMessage>({
    transform(message, controller) {
      listener("in", message);
      controller.enqueue(message);
    },
  });
  const outgoing = new TransformStream<AnyMessage, AnyMessage>({
    transform(message, controller) {
      listener("out", message);
      controller.enqueue(message);
    },
  });
  void outgoing.readable.pipeTo(stream.writable).catch(() => undefined);
  return { readable: stream.readable.pipeThrough(incoming), writable: outgoing.writable };
}
