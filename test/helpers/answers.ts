/**
 * A long Markdown answer of the kind a model writes: a heading, 60 paragraphs with formulas, a
 * table of 40 rows, 60 lines of code, nested lists, and filler up to 10,000 characters or more.
 */
export function longMarkdownAnswer(): string {
  const prose = Array.from(
    { length: 60 },
    (_, i) => `Paragraph ${i} says **something** about $x_${i}$ and more words here.`,
  );
  const table = [
    "| n | square |",
    "|--:|--:|",
    ...Array.from({ length: 40 }, (_, i) => `| ${i} | ${i * i} |`),
  ];
  const code = [
    "```ts",
    ...Array.from({ length: 60 }, (_, i) => `const v${i} = ${i} < 10 && "a" ? 1 : 2;`),
    "```",
  ];
  let answer = [
    "# Report",
    ...prose.slice(0, 30),
    table.join("\n"),
    code.join("\n"),
    ...prose.slice(30),
    "- one\n  - two\n    - three",
  ].join("\n\n");
  while (answer.length < 10_000) answer += "\n\nFiller sentence with $5 and $10 in it.";
  return answer;
}
