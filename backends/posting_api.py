"""The Twitter API: one account that posts, retweets, comments and follows.

Behaviour follows the reference ``TwitterAPI`` of bfcl-eval, quirks included (each
one is marked ``Quirk:``). Tweets are keyed by int id; comments keep the keys the
scenario gave them (strings from JSON) and get int keys when added by a call.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Union

import attrs

from bfcl_safe.backends import growth
from bfcl_safe.backends.base import Backend
from bfcl_safe.backends.config_data import copy_data
from bfcl_safe.interp.tools import tool


def _not_authenticated(action: str) -> dict[str, str]:
    return {"error": f"User not authenticated. Please authenticate before {action}."}


def _tweet_not_found(tweet_id: Any) -> dict[str, str]:
    return {"error": f"Tweet with ID {tweet_id} not found."}


@attrs.define(eq=False)
class TwitterAPI(Backend):
    """A single Twitter account and the tweets, comments and retweets it can see."""

    username: str
    password: str
    authenticated: bool
    tweets: Dict[int, Dict[str, Any]]
    comments: Dict[Any, List[Dict[str, str]]]
    retweets: Dict[str, List[int]]
    following_list: List[str]
    # Next tweet id; it need not equal len(tweets) in a scenario.
    tweet_counter: int

    @classmethod
    def from_scenario(cls, config: Mapping[str, Any], long_context_data: Mapping[str, Any] | None) -> TwitterAPI:
        """The state the reference's ``_load_scenario`` builds
        (long-context mode adds no data to this API)."""
        tweets = config["tweets"] if "tweets" in config else {}
        return cls(
            username=copy_data(config["username"]) if "username" in config else "john",
            password=copy_data(config["password"]) if "password" in config else "john123",
            authenticated=copy_data(config["authenticated"]) if "authenticated" in config else False,
            # The scenario's tweet ids are JSON strings; they become ints here.
            tweets={int(key): copy_data(tweet) for key, tweet in tweets.items()},
            # Quirk: comment keys are not converted, so loaded comments stay under "1"
            # while comments added later go under the int 1.
            comments=copy_data(config["comments"]) if "comments" in config else {},
            retweets=copy_data(config["retweets"]) if "retweets" in config else {},
            following_list=(
                copy_data(config["following_list"]) if "following_list" in config else ["alice", "bob"]
            ),
            tweet_counter=copy_data(config["tweet_counter"]) if "tweet_counter" in config else 0,
        )

    def public_state(self) -> dict[str, Any]:
        """The attributes the checker compares, in the reference's order."""
        return {
            "username": self.username,
            "password": self.password,
            "authenticated": self.authenticated,
            "tweets": self.tweets,
            "comments": self.comments,
            "retweets": self.retweets,
            "following_list": self.following_list,
            "tweet_counter": self.tweet_counter,
        }

    @tool
    def authenticate_twitter(self, username: str, password: str) -> Dict[str, bool]:
        """Log in with username and password.

        Args:
            username: the account name.
            password: the account password.
        Returns:
            authentication_status: whether both matched.
        """
        if username == self.username and password == self.password:
            self.authenticated = True
            return {"authentication_status": True}
        return {"authentication_status": False}

    @tool
    def posting_get_login_status(self) -> Dict[str, Union[bool, str]]:
        """Whether the account is logged in.

        Returns:
            login_status: True when authenticated.
        """
        return {"login_status": bool(self.authenticated)}

    @tool
    def post_tweet(
        self,
        content: str,
        tags: List[str] = [],  # noqa: B006 - Quirk kept on purpose, see below
        mentions: List[str] = [],  # noqa: B006
    ) -> Dict[str, Any]:
        """Post a tweet (needs a login).

        Quirk: like the reference, the defaults of ``tags`` and ``mentions`` are single
        list objects shared by every call of every instance in the process, and are
        stored in the tweet as they are; ``mention`` extends a tweet's list in place,
        so mentioning on a tweet posted without ``mentions`` changes the default (and
        every tweet holding it) for all later posts, as in the reference.

        Args:
            content: the text.
            tags: optional tags, each starting with '#'.
            mentions: optional user mentions, each starting with '@'.
        Returns:
            The stored tweet (id, username, content, tags, mentions); or an error.
        """
        if not self.authenticated:
            return _not_authenticated("posting")
        growth.store(content, tags, mentions, records=5, inside=(self.tweets,))
        tweet = {
            "id": self.tweet_counter,
            "username": self.username,
            "content": content,
            "tags": tags,
            "mentions": mentions,
        }
        self.tweets[self.tweet_counter] = tweet
        self.tweet_counter += 1
        return tweet

    @tool
    def retweet(self, tweet_id: int) -> Dict[str, str]:
        """Retweet a tweet (needs a login).

        Args:
            tweet_id: id of the tweet.
        Returns:
            retweet_status: the outcome; or an error.
        """
        if not self.authenticated:
            return _not_authenticated("retweeting")
        if tweet_id not in self.tweets:
            return _tweet_not_found(tweet_id)
        if self.username not in self.retweets:
            self.retweets[self.username] = []
        growth.scan(self.retweets[self.username])
        if tweet_id in self.retweets[self.username]:
            return {"retweet_status": "Already retweeted"}
        growth.store(tweet_id)
        self.retweets[self.username].append(tweet_id)
        return {"retweet_status": "Successfully retweeted"}

    @tool
    def comment(self, tweet_id: int, comment_content: str) -> Dict[str, str]:
        """Comment on a tweet (needs a login).

        Args:
            tweet_id: id of the tweet.
            comment_content: the comment text.
        Returns:
            comment_status: the outcome; or an error.
        """
        if not self.authenticated:
            return _not_authenticated("commenting")
        if tweet_id not in self.tweets:
            return _tweet_not_found(tweet_id)
        growth.store(tweet_id, self.username, comment_content, records=3,
                     inside=(self.comments, self.comments.get(tweet_id)))
        if tweet_id not in self.comments:
            self.comments[tweet_id] = []
        self.comments[tweet_id].append({"username": self.username, "content": comment_content})
        return {"comment_status": "Comment added successfully"}

    @tool
    def mention(self, tweet_id: int, mentioned_usernames: List[str]) -> Dict[str, str]:
        """Add mentions to a tweet. Quirk: no login is needed.

        Args:
            tweet_id: id of the tweet.
            mentioned_usernames: the users to mention.
        Returns:
            mention_status: the outcome; or an error.
        """
        if tweet_id not in self.tweets:
            return _tweet_not_found(tweet_id)
        # In place, on purpose: see the quirk in post_tweet. A list given here may be a
        # live part of the state (``get_tweet_comments(...)``), even this very list, as in
        # the reference: it doubles on every such call, so its size is charged first.
        tweet = self.tweets[tweet_id]
        target = tweet.get("mentions") if isinstance(tweet, dict) else None
        growth.store(mentioned_usernames, records=0, spread=True, inside=(self.tweets, tweet, target))
        if target is not None and target is _default_mentions() and isinstance(mentioned_usernames, _SIZED):
            # The default list outlives the entry (see post_tweet): what entries add to it
            # is bounded process-wide, not only per entry.
            growth.refuse_above(growth.SHARED_DEFAULT_ITEMS, len(target) + len(mentioned_usernames))
        self.tweets[tweet_id]["mentions"].extend(mentioned_usernames)
        return {"mention_status": "Users mentioned successfully"}

    @tool
    def follow_user(self, username_to_follow: str) -> Dict[str, Any]:
        """Follow a user (needs a login).

        Args:
            username_to_follow: the user to follow.
        Returns:
            follow_status: False when already followed; or an error.
        """
        if not self.authenticated:
            return _not_authenticated("following")
        growth.scan(self.following_list)
        if username_to_follow in self.following_list:
            return {"follow_status": False}
        growth.store(username_to_follow, inside=(self.following_list,))
        self.following_list.append(username_to_follow)
        return {"follow_status": True}

    @tool
    def list_all_following(self) -> Dict[str, Any]:
        """The users this account follows (needs a login).

        Returns:
            following_list: the user names; or an error.
        """
        if not self.authenticated:
            return _not_authenticated("listing following")
        return {"following_list": self.following_list}

    @tool
    def unfollow_user(self, username_to_unfollow: str) -> Dict[str, Any]:
        """Stop following a user (needs a login).

        Args:
            username_to_unfollow: the user to unfollow.
        Returns:
            unfollow_status: False when not followed; or an error.
        """
        if not self.authenticated:
            return _not_authenticated("unfollowing")
        growth.scan(self.following_list)
        if username_to_unfollow not in self.following_list:
            return {"unfollow_status": False}
        self.following_list.remove(username_to_unfollow)
        return {"unfollow_status": True}

    @tool
    def get_tweet(self, tweet_id: int) -> Dict[str, Any]:
        """One tweet by id. Quirk: no login is needed.

        Args:
            tweet_id: id of the tweet.
        Returns:
            The tweet (id, username, content, tags, mentions); or an error.
        """
        if tweet_id not in self.tweets:
            return _tweet_not_found(tweet_id)
        return self.tweets[tweet_id]

    @tool
    def get_user_tweets(self, username: str) -> List[Dict[str, Union[int, str, List[str]]]]:
        """All tweets by a user (a list, so the result is rendered with ``str``).

        Args:
            username: the author.
        Returns:
            The matching tweets.
        """
        growth.scan(self.tweets)
        return [tweet for tweet in self.tweets.values() if tweet["username"] == username]

    @tool
    def search_tweets(self, keyword: str) -> List[Dict[str, Union[int, str, List[str]]]]:
        """Tweets whose content contains a keyword, or with a tag equal to it, ignoring case.

        Args:
            keyword: the text to look for.
        Returns:
            The matching tweets.
        """
        growth.scan(self.tweets)
        # The tag list is built in full (not short-circuited) for each tweet whose
        # content does not match, so a bad tag raises exactly when the reference's does.
        return [
            tweet
            for tweet in self.tweets.values()
            if keyword.lower() in tweet["content"].lower()
            or keyword.lower() in [tag.lower() for tag in tweet["tags"]]
        ]

    @tool
    def get_tweet_comments(self, tweet_id: int) -> Any:
        """The comments of a tweet.

        Args:
            tweet_id: id of the tweet.
        Returns:
            The comments (username, content); or an error dict.
        """
        if tweet_id not in self.tweets:
            return _tweet_not_found(tweet_id)
        return self.comments.get(tweet_id, [])

    @tool
    def get_user_stats(self, username: str) -> Dict[str, int]:
        """Counts for a user.

        Args:
            username: the user.
        Returns:
            tweet_count, following_count (0 unless it is this account) and retweet_count.
        """
        growth.scan(self.tweets)
        tweet_count = len([tweet for tweet in self.tweets.values() if tweet["username"] == username])
        following_count = len(self.following_list) if username == self.username else 0
        retweet_count = len(self.retweets.get(username, []))
        return {
            "tweet_count": tweet_count,
            "following_count": following_count,
            "retweet_count": retweet_count,
        }


def _default_mentions() -> Any:
    """post_tweet's default ``mentions`` list: one object for the whole process (see the
    quirk in post_tweet), so ``mention`` on a tweet posted without mentions grows it for
    every later entry scored in this process, as in the reference. (Looked up each time:
    a test may give the function fresh defaults.)"""
    defaults = TwitterAPI.post_tweet.__defaults__ or ()
    return defaults[1] if len(defaults) > 1 else None


_SIZED = (list, tuple, str, dict, set, frozenset)
