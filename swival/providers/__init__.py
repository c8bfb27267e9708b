"""Model servers. The only package that imports litellm, and only lazily.

    factory.py        connect(settings) -> Provider; warm_up()          (the entry points)
    discovery.py      model and real window per server kind (plain HTTP probes)
    http.py           the JSON probe helper with short timeouts
    streaming.py      StreamingProvider: retries, repair, overflow and empty-reply handling
    openai_compat.py  LM Studio, llama.cpp, generic and hosted servers through litellm
    ollama.py         Ollama through its native /api/chat with a fixed num_ctx
    overflow.py       classify_overflow: every way a server says the prompt did not fit
    repair.py         tool calls written as text, broken JSON arguments
    base.py           the Provider protocol and its data types
"""
