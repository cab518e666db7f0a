import type { MediaPart } from "../session/events.js";
import type { ChatContext } from "../session/store.js";

/**
 * The pictures of a conversation's context, oldest first: photos sent, images sent as files (a
 * screenshot kept as a PNG: their bytes were checked to be the image type they carry), and
 * pictures drawn.
 */
export function picturesOf(context: ChatContext): MediaPart[] {
  return context.events.flatMap(({ event }) =>
    event.parts.filter(
      (part): part is MediaPart =>
        part.kind === "media" &&
        (part.media === "photo" || part.media === "document") &&
        !part.thought &&
        part.mimeType.startsWith("image/"),
    ),
  );
}

/**
 * The picture `reference` names: "last" (the latest), a file name as tool results and /history
 * show it, or the start of its SHA-256. An error the model can act on says which pictures there are.
 */
export function pictureNamed(pictures: readonly MediaPart[], reference: string): MediaPart {
  const wanted = reference.trim().toLowerCase();
  if (pictures.length === 0) {
    throw new Error(
      "this conversation has no picture to change; draw a new one without edit, or ask the user to send one",
    );
  }
  if (wanted === "last" || wanted === "latest") return pictures.at(-1) as MediaPart;
  const found = [...pictures]
    .reverse()
    .find(
      (part) =>
        part.name?.toLowerCase() === wanted ||
        (wanted.length >= 8 && part.sha256.startsWith(wanted)) ||
        (wanted.startsWith("image-") && part.sha256.startsWith(wanted.slice(6, 18))),
    );
  if (found) return found;
  const names = pictures
    .slice(-10)
    .map((part) => part.name ?? `sha256 ${part.sha256.slice(0, 12)}`)
    .join(", ");
  throw new Error(
    `no picture named "${reference}" in this conversation; its latest pictures: ${names} (or "last")`,
  );
}
