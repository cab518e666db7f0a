/**
 * What the model's Markdown links may become, decided here for every renderer (rich HTML, the
 * HTML messages and the plain text made from them), so that no link lies about where it goes:
 *
 * - only http, https and mailto links are kept: a `tg:` link can open a proxy setting, a login
 *   or another user's profile with one tap, and other schemes are not Telegram's to open;
 * - a link whose text names an address (a URL, a domain, an e-mail address) other than its target
 *   shows its text unlinked, then the real target as the link: "bank.example (https://evil.example/login)";
 * - a user name before the host ("https://bank.example@evil.example/") reads as the host to most
 *   people: the link goes without it, and text that shows an address with one names no target.
 */

export type LinkPlan =
  /** Not a link Koroku sends: the text alone. */
  | { readonly kind: "text" }
  /**
   * A link with its own text, or with its address as text when the text shows nothing. `href` is
   * the target to link to, which may differ from the one written (see withoutUserinfo).
   */
  | { readonly kind: "link"; readonly href: string; readonly text: "own" | "address" }
  /** The text, unlinked, then the real target as a link whose text is the address. */
  | { readonly kind: "text-then-address"; readonly href: string };

const SCHEME = /^(?:https?:\/\/|mailto:)/i;
/** Characters a client shows as nothing, which could hide inside an address. */
const INVISIBLE = /[\p{Cf}\u115f\u1160\u3164\uffa0]/gu;
/** Full stops a URL parser reads as the dot of a domain. */
const DOTS = /[\u3002\uff0e\uff61]/g;
const PUNCTUATION = /^[\s"'([{<«“‘]+|[\s"')\]}>»”’.,;:!?]+$/gu;
const EMAIL = /^(?:mailto:)?([^\s@/]+@[^\s@/]+\.[^\s@/.]+)$/iu;
const DOMAIN =
  /^(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]*[\p{L}\p{N}])?\.)+\p{L}[\p{L}\p{N}-]*[\p{L}\p{N}](?:[:/?#]\S*)?$/u;

/** How to render a link to `href` (as markdown-it normalised it) that shows `text`. */
export function planLink(href: string, text: string): LinkPlan {
  const target = addressOf(href);
  if (target === undefined) return { kind: "text" };
  const real = withoutUserinfo(href);
  const shown = text.replace(INVISIBLE, "").replace(DOTS, ".");
  if (shown.trim() === "") return { kind: "link", href: real, text: "address" };
  const honest = addressesIn(shown).every((named) => sameAddress(named, target));
  return honest
    ? { kind: "link", href: real, text: "own" }
    : { kind: "text-then-address", href: real };
}

const USERINFO = /^https?:\/\/[^/?#]*@/i;

/** An http(s) URL without the "user:password@" before its host; any other as it is. */
function withoutUserinfo(href: string): string {
  if (!USERINFO.test(href)) return href;
  try {
    const url = new URL(href);
    url.username = "";
    url.password = "";
    return url.href;
  } catch {
    return href;
  }
}

interface Address {
  /** Lowercase, ASCII (punycode), without a leading "www.". */
  readonly host: string;
  /** An e-mail address, lowercase, when it is one. */
  readonly mailbox?: string;
}

function addressOf(href: string): Address | undefined {
  if (!SCHEME.test(href)) return undefined;
  if (/^mailto:/i.test(href)) {
    const mailbox = safeDecode(href.slice("mailto:".length).split("?")[0] ?? "");
    return mailbox === undefined ? undefined : mailboxAddress(mailbox);
  }
  return hostAddress(href);
}

/** Every address the text names, each word on its own; an address that cannot be read too. */
function addressesIn(text: string): (Address | undefined)[] {
  return text
    .split(/\s+/)
    .map((word) => word.replace(PUNCTUATION, ""))
    .flatMap((word) => {
      // An address shown with a user name in front names the wrong host, whatever it links to.
      if (word.includes("://")) return [USERINFO.test(word) ? undefined : hostAddress(word)];
      const email = EMAIL.exec(word);
      if (email?.[1] !== undefined) return [mailboxAddress(email[1])];
      return DOMAIN.test(word) ? [hostAddress(`http://${word}`)] : [];
    });
}

function sameAddress(named: Address | undefined, target: Address): boolean {
  if (named === undefined) return false;
  if (named.mailbox !== undefined && target.mailbox !== undefined) {
    return named.mailbox === target.mailbox;
  }
  return named.host === target.host;
}

function hostAddress(url: string): Address | undefined {
  try {
    return { host: bareHost(new URL(url).hostname) };
  } catch {
    return undefined;
  }
}

function mailboxAddress(mailbox: string): Address | undefined {
  const at = mailbox.lastIndexOf("@");
  const domain = hostAddress(`http://${mailbox.slice(at + 1)}`);
  if (at <= 0 || domain === undefined) return undefined;
  return { host: domain.host, mailbox: `${mailbox.slice(0, at)}@${domain.host}`.toLowerCase() };
}

function bareHost(hostname: string): string {
  return hostname.toLowerCase().replace(/^www\./, "");
}

function safeDecode(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}
