import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, expect, it } from "vitest";
import { withoutRedirects } from "../../src/http/no-redirects.js";

let server: Server;
let url = "";
beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    if (req.url === "/moved") res.writeHead(307, { location: "/target" }).end();
    else res.end("here");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const post = { method: "POST", body: '{"contents":[]}' };

it("sends a request as it is, and gives its answer", async () => {
  const response = await withoutRedirects(fetch)(`${url}/target`, post);
  expect(await response.text()).toBe("here");
});

it("refuses a redirect, which plain fetch follows", async () => {
  expect(await (await fetch(`${url}/moved`, post)).text()).toBe("here");
  await expect(withoutRedirects(fetch)(`${url}/moved`, post)).rejects.toThrow(TypeError);
});
