"""Adapters that let other frameworks use munjang embeddings: LangChain (`MunjangEmbeddings`) and
LlamaIndex (`MunjangEmbedding`). Each works with a local encoder or a munjang server (`Client`).
Import them from their modules, so neither framework is needed unless used:

    from munjang.integrations.langchain import MunjangEmbeddings
    from munjang.integrations.llama_index import MunjangEmbedding
"""
