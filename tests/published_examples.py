"""Published worked examples of agreement statistics: the data, and where the published
numbers come from. tests/test_agreement.py checks the functions on them, tests/test_report_cli.py
the same numbers through `annotate report`.

Sources:

- Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. Annenberg School for
  Communication, University of Pennsylvania. Example A (binary, 2 observers, 10 units):
  alpha = 0.095. Example B (nominal, 2 observers, 12 units): alpha = 0.692. Example C (4
  observers, 12 units, values 1-5, missing data): nominal 0.743, ordinal 0.815, interval 0.849.
- Gwet, K. L. (2014). Handbook of Inter-Rater Reliability, 4th ed., p. 120: the same 4 x 12
  data set, shipped as ``cac.raw4raters`` in the irrCAC R package, whose documented output is
  AC1 = 0.77544 (pa = 0.8181818, pe = 0.1903212).
- Fleiss' kappa worked example on Wikipedia ("Fleiss' kappa", 14 raters, 10 subjects, 5
  categories): P-bar = 0.378, P-bar_e = 0.213, kappa = 0.210.
- irrCAC 1.0 vignette "Calculating Chance-corrected Agreement Coefficients (CAC)" (K. L. Gwet,
  inst/doc/overview.html), printed output, three categories each: ``cont3x3abstractors`` (Gwet
  2014, 2 abstractors x 100 women, Ectopic/AIU/NIU): gwet.ac1.table 0.8493305, krippen2.table
  0.7972585, pa2.table 0.89; ``cac.dist4cat`` (4 raters x 15 subjects, a/b/c):
  gwet.ac1.dist 0.3518903.
- Stata's example data ``rvary2`` (5 raters x 10 subjects, categories 1-3, 3 ratings missing)
  and its ``kappaetc rater1-rater5`` output (Klein 2018, Stata Journal 18(4), 871-901; Gwet's
  formulas) as printed in the documentation of the R package lagree (R/calc-ac_raw.R): percent
  agreement 0.5833, Gwet's AC 0.3829, Krippendorff's alpha 0.3897: nominal alpha and AC1 with
  missing ratings in three categories, so it also runs through the report's preferences.
"""

N = None  # a missing rating

# Krippendorff (2011) example C = irrCAC cac.raw4raters: observers x units, None = missing.
EXAMPLE_C = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    "C": [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
}

# Krippendorff (2011) example A: binary data, two observers, no missing values.
EXAMPLE_A = [[0, 1, 0, 0, 0, 0, 0, 0, 1, 0], [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]]

# Krippendorff (2011) example B: nominal data, two observers (Ben, Gerry), no missing values.
EXAMPLE_B = [
    ["a", "a", "b", "b", "d", "c", "c", "c", "e", "d", "d", "a"],
    ["b", "a", "b", "b", "b", "c", "c", "c", "e", "d", "d", "d"],
]

# The next three have exactly three categories, so they map one to one onto the report's
# preference labels (chosen/rejected/tie) and AC1's Q is 3 in the source as in the report.

# irrCAC cont3x3abstractors: rows abstractor 1, columns abstractor 2 (Ectopic, AIU, NIU).
ABSTRACTORS = [[13, 0, 0], [0, 20, 7], [0, 4, 56]]

# irrCAC cac.dist4cat: raters per category a, b, c for each of 15 subjects (4 raters each).
DIST4CAT = [
    [3, 0, 1], [2, 1, 1], [2, 1, 1], [2, 0, 2], [3, 1, 0], [3, 1, 0], [0, 4, 0], [0, 3, 1],
    [0, 0, 4], [3, 1, 0], [0, 4, 0], [0, 3, 1], [0, 2, 2], [0, 0, 4], [3, 1, 0],
]  # fmt: skip

# Stata rvary2: subjects x raters, None = the rater did not rate the subject.
RVARY2 = [
    [1, 2, 2, N, 2], [1, 1, 3, 3, 3], [3, 3, 3, 3, 3], [1, 1, 1, 1, 3], [1, 1, 1, 3, 3],
    [1, 2, 2, 2, 2], [1, 1, 1, 1, 1], [2, 2, 2, 2, 3], [1, 3, N, N, 3], [1, 1, 1, 3, 3],
]  # fmt: skip

# Wikipedia "Fleiss' kappa" worked example: 10 subjects x 5 categories, 14 raters each.
FLEISS_WIKIPEDIA = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]
