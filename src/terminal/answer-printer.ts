import { renderLine, type Styles } from "./markdown.js";

const PREFIX = "Koroku: ";
// What a terminal is taken to be wide when it does not say: a pty may report 0 columns.
const DEFAULT_COLUMNS = 80;

export type AnswerPrinter = ReturnType<typeof createAnswerPrinter>;

/**
 * Prints an answer while it is written. Each line is printed rendered once it is complete; on a
 * terminal (`reportedColumns` given, even as 0) the line being written shows as it grows, and is redrawn rendered
 * when it is done, and a dim status line says what Koroku is doing meanwhile.
 */
export function createAnswerPrinter(
  out: { write(text: string): unknown },
  styles: Styles,
  reportedColumns: number | undefined,
) {
  const columns =
    reportedColumns === undefined
      ? undefined
      : Number.isFinite(reportedColumns) && reportedColumns >= 1
        ? Math.floor(reportedColumns)
        : DEFAULT_COLUMNS;
  /** The lines of this round's text already printed, and all of its text so far. */
  let printed: string[] = [];
  let current = "";
  let code = { inCode: false };
  let shownWidth = 0;

  const write = (text: string) => out.write(text);
  /** Removes what is shown of the line being written (it is redrawn, or replaced). */
  const erase = () => {
    if (columns === undefined || shownWidth === 0) return;
    const rows = Math.max(1, Math.ceil(shownWidth / columns));
    write(`\r${rows > 1 ? `\x1b[${rows - 1}A` : ""}\x1b[J`);
    shownWidth = 0;
  };
  const showTransient = (text: string) => {
    erase();
    if (columns === undefined || text === "") return;
    write(text);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI styles take no room.
    shownWidth = [...text.replace(/\x1b\[[0-9;]*m/g, "")].length;
  };
  const prefix = () => (printed.length === 0 ? PREFIX : "");
  const newRound = () => {
    printed = [];
    current = "";
    code = { inCode: false };
  };

  function text(full: string): void {
    current = full;
    const lines = full.split("\n");
    const partial = lines.pop() ?? "";
    erase();
    for (let i = printed.length; i < lines.length; i++) {
      const line = lines[i] ?? "";
      write(`${prefix()}${renderLine(line, styles, code)}\n`);
      printed.push(line);
    }
    showTransient(partial === "" ? "" : `${prefix()}${partial}`);
  }

  /** Prints the rest of this round's text as complete lines, and starts a new round. */
  const flush = (full: string) => {
    if (full.trim() !== "") text(full.endsWith("\n") ? full : `${full}\n`);
    else erase();
    newRound();
  };

  return {
    text,
    /** Dim, and gone with the next thing printed: "thinking…", the tool that runs. */
    status(line: string): void {
      showTransient(styles.dim(line));
    },
    /** A line of its own (a tool's result, a notice), kept. */
    line(line: string): void {
      erase();
      write(`${line}\n`);
    },
    /** The text so far is done with (a tool runs now); what the model writes next is new. */
    endRound(): void {
      flush(current);
    },
    /** The stream broke off and starts over. */
    restart(): void {
      erase();
      if (printed.length > 0) write(`${styles.dim("(the answer broke off; it starts over)")}\n`);
      newRound();
    },
    /** The finished answer: whatever of it is not printed yet, and a note after it. */
    finish(answer: string, note?: string): void {
      if (!answer.startsWith(printed.join("\n"))) newRound();
      flush(answer);
      if (note) write(`${styles.dim(note)}\n`);
    },
  };
}
