"""A small Korean corpus the classical encoders (TF-IDF, bag of words, word2vec) are fitted on in tests:
two sentences about cats, two about the weather, two about markets, a dog and an umbrella."""

from __future__ import annotations

CORPUS = [
    "고양이가 쥐를 쫓았다",
    "강아지가 공원에서 뛰어논다",
    "오늘 서울은 비가 온다",
    "내일 부산은 맑겠다",
    "주식 시장이 크게 올랐다",
    "환율이 내려서 수입 물가가 떨어졌다",
    "고양이는 생선을 좋아한다",
    "비 오는 날에는 우산이 필요하다",
]
