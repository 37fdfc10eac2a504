"""Building the Wiki-VEL dataset (paper §3): the dumps in, a manifest, splits and images out.

Pure: nothing here imports torch, so a dataset can be built, read and checked without it.

    dataset.py     manifest + card on disk; mapping, leakage removal
    splits.py      the seeded split, drawn before the frequency filter (splits/*.txt)
    counts.py      train-split item counts after promotion; where f was counted
    filenames.py   one spelling of a file's name for titles, P18 values and loose files
    categories.py  which Commons categories describe the image (patterns as data)
    pages.py       streaming the pages XML dump; description and category links
    builder.py     the dumps -> a dataset (``dataset build``)
    shards.py      tar shards (WebDataset layout) and the image store
    fetch.py       polite thumbnail downloads into shards (``dataset fetch``)
    published.py   the published dataset's layout, read as it is (``dataset import-published``)

The room's front door imports nothing; import the modules themselves.
"""
