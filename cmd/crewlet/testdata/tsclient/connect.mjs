// connect.mjs connects one official MCP TypeScript SDK client, as a plan
// names it (sdk "v1": @modelcontextprotocol/sdk 1.x, "v2":
// @modelcontextprotocol/client 2.x; transport stdio or http), for
// harness.mjs and features.mjs.

export async function connect(plan) {
  const info = { name: `crewlet-harness-${plan.sdk}`, version: "0.0.0" };
  if (plan.sdk === "v1") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const client = new Client(info);
    let transport;
    if (plan.transport.kind === "stdio") {
      const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
      transport = new StdioClientTransport({ command: plan.transport.command, args: plan.transport.args, stderr: "inherit" });
    } else {
      const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
      transport = new StreamableHTTPClientTransport(new URL(plan.transport.url), { requestInit: { headers: plan.transport.headers } });
    }
    await client.connect(transport);
    return { client, protocol: transport.protocolVersion ?? "" };
  }
  if (plan.sdk === "v2") {
    const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
    const client = new Client(info);
    let transport;
    if (plan.transport.kind === "stdio") {
      const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
      transport = new StdioClientTransport({ command: plan.transport.command, args: plan.transport.args, stderr: "inherit" });
    } else {
      transport = new StreamableHTTPClientTransport(new URL(plan.transport.url), { requestInit: { headers: plan.transport.headers } });
    }
    await client.connect(transport);
    return { client, protocol: client.getNegotiatedProtocolVersion?.() ?? "" };
  }
  throw new Error(`unknown sdk ${plan.sdk}`);
}
