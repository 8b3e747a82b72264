def test_a_whole_number_beside_a_blank_stays_whole_in_csv():
    import pandas as pd

    from mi_plateau.frames import to_csv

    text = to_csv(pd.DataFrame([{"run": "a", "tau": 150}, {"run": "b", "tau": None}]))
    assert text.splitlines() == ["run,tau", "a,150", "b,"]
    text = to_csv(pd.DataFrame([{"run": "a", "x": 1.0}, {"run": "b", "x": 2.5}]))  # real floats stay floats
    assert text.splitlines()[1:] == ["a,1.0", "b,2.5"]
