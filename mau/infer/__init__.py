"""What a crewmate can infer from what it perceived (docs/detection.md): its evidence as data
(``evidence``: built from its own observations only), the likelihood model and the exact posterior over the
imposter sets (``model``), its maximum-likelihood fit on training matches (``fit``), and how meeting speech
reads as accusations (``hearsay``). The scripted teacher (``mau.env.scripted``), ARIA's evidence memory and
the ideal observer (``mau.harness.beliefs``) all use this one model, so the teacher votes on exactly the
evidence its prompt shows and the observer is the same reasoning with perfect attention."""
