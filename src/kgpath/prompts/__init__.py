"""Prompt templates as plain string constants with named ``{variables}``, one module per method.

Adapters wrap them into LlamaIndex ``PromptTemplate`` / LangChain ``ChatPromptTemplate``.
"""

__all__: list[str] = []
