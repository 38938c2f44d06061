"""Korean (and one English) sentences from which the passage and document tests build long texts, and
short Korean documents of three kinds for the tests of several processes or connections."""

from __future__ import annotations

SENTENCES = [
    "서울은 대한민국의 수도이며 인구가 가장 많은 도시이다.",
    "한강이 도시의 가운데를 가로질러 흐른다.",
    "부산은 남쪽 바다에 있는 항구 도시로 해운대 해수욕장이 유명하다.",
    "고양이는 하루의 대부분을 잠으로 보낸다.",
    "주식 시장은 금리 발표 뒤에 크게 흔들렸다.",
    "The guitarist played a long solo on the festival stage.",
    "기차는 아침 일곱 시에 서울역을 출발한다.",
    "제주도는 화산섬으로 한라산이 섬의 중심에 있다.",
]


def numbered(times: int) -> str:
    """The sentences repeated `times` times, each numbered so that no two windows of it read alike."""
    return " ".join(f"{n}번. {s}" for n, s in enumerate(SENTENCES * times))


# Short Korean documents with a "kind" to filter on: id -> (text, metadata).
BY_KIND = {
    "apple": ("사과는 빨갛고 달콤한 과일이다", {"kind": "fruit"}),
    "pear": ("배는 시원하고 물이 많은 과일이다", {"kind": "fruit"}),
    "stock": ("주식 시장이 오늘 크게 떨어졌다", {"kind": "news"}),
    "weather": ("내일은 전국이 맑고 따뜻하겠습니다", {"kind": "news"}),
    "cat": ("고양이가 소파 위에서 낮잠을 잔다", {"kind": "pet"}),
}
