"""Analysis of a recorded failure, as data: its window, the objects' facts, the story of the
steps.
"""
