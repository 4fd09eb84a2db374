/* mcpstub: the smallest MCP server over stdio, for counting what aegis
   itself holds per session (BenchmarkServeSessionMemory): it answers
   initialize, refuses every other request with "method not found",
   ignores notifications, and exits when its input ends. No runtime, so
   that thousands of them fit beside the aegis being measured. */
#include <stdio.h>
#include <string.h>

/* id copies the value of the message's "id" member into out: the
   characters after "id": up to the next ',' or '}' (ids are numbers or
   simple strings here). It returns 0 when there is none. */
static int id(const char *line, char *out, size_t n) {
	const char *p = strstr(line, "\"id\":");
	if (!p)
		return 0;
	p += 5;
	size_t i = 0;
	while (*p && *p != ',' && *p != '}' && i + 1 < n)
		out[i++] = *p++;
	out[i] = 0;
	return i > 0;
}

int main(void) {
	static char line[1 << 16];
	char ident[256];
	setvbuf(stdout, NULL, _IOFBF, 4096);
	while (fgets(line, sizeof line, stdin)) {
		if (!strstr(line, "\"method\"") || !id(line, ident, sizeof ident))
			continue; /* a notification, or a response */
		if (strstr(line, "\"method\":\"initialize\""))
			printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":\"2025-11-25\","
			       "\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"mcpstub\",\"version\":\"1\"}}}\n",
			       ident);
		else
			printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32601,\"message\":\"method not found\"}}\n", ident);
		fflush(stdout);
	}
	return 0;
}
