from shop.slug import slugify


def test_slugify_lowers_and_dashes():
    assert slugify("Blue Mug") == "blue-mug"


def test_slugify_trims_dashes_at_the_ends():
    assert slugify("(Blue Mug)") == "blue-mug"


def test_slugify_collapses_repeated_separators():
    assert slugify("Blue  Mug -- large") == "blue-mug-large"


def test_slugify_transliterates_accents():
    assert slugify("Crème Brûlée") == "creme-brulee"
