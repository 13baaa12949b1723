"""``madiao-mao serve``: a local web app to play Madiao and Mao against the agents and to replay
recorded games (``app``: the FastAPI routes; ``games``: live games and the seat's view;
``replays``: recorded games step by step; ``store``: live games bounded in number and age;
``security``: who may send requests, what bodies are read, the headers of every response;
``static/``: the page). Needs the ``web`` extra.
"""
