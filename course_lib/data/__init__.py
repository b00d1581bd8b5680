"""data -- data sets made in code or shipped with Python (nothing is downloaded).

``rotation`` (pictures and the image-rotation task of chapters 01-05), ``corpus`` (Python's own help
text as a character corpus, chapters 07 and 09), ``activity`` (the synthetic activity-recognition task of
chapter 10). Imports only from ``core``.
"""
