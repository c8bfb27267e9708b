"""Model servers. Local servers are reached directly over httpx; litellm is imported only for
hosted models, and only lazily; httpx is imported on the first call (or by the warm-up).

    factory.py        connect(settings) -> Provider; warm_up(); spent()      (the entry points)
    discovery.py      model and real window per server kind (plain HTTP probes)
    http.py           the JSON probe helper with short timeouts (standard library); loopback
                      is never proxied; an untrusted TLS certificate is named
    streaming.py      StreamingProvider: retries (Retry-After, backoff), repair, overflow,
                      empty replies, Restart when a reply is asked for again
    wire.py           httpx channel, the two time limits (watchdog), DirectProvider
    replies.py        what a server's replies say: error messages, retried statuses,
                      Retry-After, text made short
    openai_compat.py  LM Studio, llama.cpp, generic: streamed chat completions (SSE)
    ollama.py         Ollama through its native /api/chat (NDJSON) with a fixed num_ctx
    hosted.py         hosted providers through litellm (warm-up, calls, price, errors)
    keys.py           each hosted provider's API-key variable (checked before any call)
    pricemap.py       a hosted model's window (and look-alike names) from litellm's price
                      map, read as a file
    pump.py           the two time limits for a stream litellm reads (worker thread)
    assembly.py       the one stream assembler every transport feeds
    thinking.py       a <think>...</think> block at the start of the reply text (reasoning)
    overflow.py       classify_overflow: every way a server says the prompt did not fit
    jsonfix.py        tool-call arguments: strict JSON, then unambiguous repairs
    repair.py         tool calls written as text
    textgate.py       holds back streamed text that may be a tool call written as text
    base.py           the Provider protocol and its data types
"""
