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

/**
 * An answer of about `chars` characters made of sections of a heading, prose and a list, about
 * 140 characters a block: the line breaks between its blocks add up to hundreds of characters.
 */
export function manyBlocksAnswer(chars: number): string {
  const sentence = (i: number, n: number) =>
    `Sentence ${n} of section ${i} explains **one point** with $y_${i}$ and some plain words.`;
  const paragraph = (i: number, from: number) =>
    [0, 1, 2, 3].map((n) => sentence(i, from + n)).join(" ");
  const sections: string[] = [];
  for (let i = 0; sections.join("\n\n").length < chars; i++) {
    sections.push(
      [
        `## Section ${i}`,
        paragraph(i, 0),
        paragraph(i, 4),
        paragraph(i, 8),
        `- first item of section ${i}\n- second item of section ${i}\n- third item of ${i}`,
      ].join("\n\n"),
    );
  }
  return sections.join("\n\n");
}
