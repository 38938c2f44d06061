"""Multi-vector (late interaction, ColBERT) encoders: per-token vectors scored with MaxSim."""

from .encoder import MultiVectorEncoder, load_multi_vector_encoder
from .maxsim import maxsim, maxsim_pairwise
from .settings import LateInteractionSettings, QueryExpansion

__all__ = [
    "LateInteractionSettings",
    "MultiVectorEncoder",
    "QueryExpansion",
    "load_multi_vector_encoder",
    "maxsim",
    "maxsim_pairwise",
]
